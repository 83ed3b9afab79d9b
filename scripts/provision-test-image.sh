#!/usr/bin/env bash
# Imports the test images from Debian's busybox-static: no registry is reachable, so nothing can be pulled.
#   keeper-test/busybox:latest    busybox with its applets; default command sh
#   keeper-test/web:latest        the same, serving /var/www with httpd on :8000 (a healthy service)
#   keeper-test/crashloop:latest  the same, exiting with 1 after 2 s (a crash-looping service)
source "$(dirname "$0")/lib.sh"
IMAGE="keeper-test/busybox:latest"

if docker image inspect "$IMAGE" keeper-test/web:latest keeper-test/crashloop:latest >/dev/null 2>&1; then
  say "test images present"
  exit 0
fi
BUSYBOX=/bin/busybox
[ -x "$BUSYBOX" ] && "$BUSYBOX" --list 2>/dev/null | grep -qx httpd || { apt_install busybox-static; BUSYBOX=/bin/busybox; }
file_type=$(ldd "$BUSYBOX" 2>&1 || true)
case "$file_type" in *"not a dynamic"*|*"statically linked"*) ;; *) die "$BUSYBOX is not static; install busybox-static";; esac

rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT
mkdir -p "$rootfs"/{bin,sbin,usr/bin,usr/sbin,tmp,etc,proc,sys,dev,workspace,var/www}
cp "$BUSYBOX" "$rootfs/bin/busybox"
for applet in $("$BUSYBOX" --list); do
  [ -e "$rootfs/bin/$applet" ] || ln -s busybox "$rootfs/bin/$applet"
done
echo 'root:x:0:0:root:/root:/bin/sh' >"$rootfs/etc/passwd"
echo 'root:x:0:' >"$rootfs/etc/group"
echo ok >"$rootfs/var/www/index.html"
chmod 1777 "$rootfs/tmp"
import_as() {
  local image="$1" cmd="$2"
  tar -C "$rootfs" -c . | docker import --change 'ENV PATH=/bin:/sbin:/usr/bin:/usr/sbin' --change "CMD $cmd" - "$image" >/dev/null
  say "$image imported"
}
say "importing the test images from $BUSYBOX ($("$BUSYBOX" --list | wc -l) applets)"
import_as "$IMAGE" '["sh"]'
import_as keeper-test/web:latest '["httpd", "-f", "-p", "8000", "-h", "/var/www"]'
import_as keeper-test/crashloop:latest '["sh", "-c", "echo starting; sleep 2; echo crashing; exit 1"]' 
