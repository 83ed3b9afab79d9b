#!/usr/bin/env bash
# Imports keeper-test/busybox:latest from Debian's busybox-static: no registry is reachable, so nothing can be pulled.
source "$(dirname "$0")/lib.sh"
IMAGE="keeper-test/busybox:latest"

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  say "$IMAGE present"
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
say "importing $IMAGE from $BUSYBOX ($("$BUSYBOX" --list | wc -l) applets)"
tar -C "$rootfs" -c . | docker import \
  --change 'ENV PATH=/bin:/sbin:/usr/bin:/usr/sbin' \
  --change 'CMD ["sh"]' - "$IMAGE" >/dev/null
say "$IMAGE imported"
