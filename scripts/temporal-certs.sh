#!/usr/bin/env bash
# Makes the certificates of an mTLS Temporal cluster with openssl: what docker-compose.temporal.mtls.yml mounts,
# and what the tests' own cluster (test/helpers/cluster) runs with, so both are made the same way.
#
#   temporal-certs.sh DIR [SAN...]      e.g. temporal-certs.sh ./temporal-certs DNS:temporal
#
# writes into DIR (created 0700; refuses to overwrite an existing CA):
#   ca.pem ca.key                        the CA: the frontend trusts client certificates it signed, clients trust
#                                        the frontend's certificate through it
#   server.pem server.key                the frontend's certificate, subjectAltName DNS:localhost,IP:127.0.0.1
#                                        plus the SANs given (the names clients dial)
#   keeper.pem keeper.key                keeper's client certificate
#   system-worker.pem system-worker.key  the client certificate of the server's own system worker (schedules,
#                                        batch operations, …), which connects to the frontend like any client
#   admin.pem admin.key                  a client certificate for operators' tools (admin tools, the UI)
# Keys are P-256, mode 0600. Certificates are valid for KEEPER_CERT_DAYS days (365 by default).
source "$(dirname "$0")/lib.sh"
[ $# -ge 1 ] || die "usage: temporal-certs.sh DIR [SAN...]"
DIR="$1"; shift
DAYS="${KEEPER_CERT_DAYS:-365}"
command -v openssl >/dev/null 2>&1 || die "openssl is required (scripts/provision-temporal-server.sh installs it)"
[ ! -e "$DIR/ca.pem" ] || die "$DIR/ca.pem exists: refusing to replace a CA"
mkdir -p "$DIR" && chmod 0700 "$DIR"

# A new P-256 key in $1.key and a request for subject CN=$2 in $1.csr.
new_key() {
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$DIR/$1.key" -out "$DIR/$1.csr" \
    -subj "/CN=$2" 2>/dev/null || die "openssl could not make the key of $1"
  chmod 0600 "$DIR/$1.key"
}

# Signs $1.csr with the CA into $1.pem, with the extensions in $2 (one per line).
sign() {
  local ext="$DIR/$1.ext"
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "subjectKeyIdentifier=hash" "authorityKeyIdentifier=keyid" "$2" >"$ext"
  openssl x509 -req -in "$DIR/$1.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
    -days "$DAYS" -extfile "$ext" -out "$DIR/$1.pem" 2>/dev/null || die "openssl could not sign the certificate of $1"
  rm -f "$DIR/$1.csr" "$ext"
}

openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$DIR/ca.key" -out "$DIR/ca.pem" \
  -days "$DAYS" -subj "/CN=keeper temporal CA $(openssl rand -hex 4)" -addext basicConstraints=critical,CA:TRUE \
  -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null || die "openssl could not make the CA"
chmod 0600 "$DIR/ca.key"

sans="DNS:localhost,IP:127.0.0.1"
for san in "$@"; do sans="$sans,$san"; done
new_key server localhost
sign server "$(printf 'extendedKeyUsage=serverAuth\nsubjectAltName=%s' "$sans")"
for client in keeper system-worker admin; do
  new_key "$client" "$client"
  sign "$client" "extendedKeyUsage=clientAuth"
done
say "certificates in $DIR (server SANs $sans)"
