#!/usr/bin/env bash
# make-certs.sh OUTDIR [NAMESPACE]: a private CA, the extender's serving certificate and
# kube-scheduler's client certificate for the extender's mutual TLS (docs/deploy.md).
#   OUTDIR/ca.crt, ca.key                 the CA (keep ca.key offline; it signs both sides)
#   OUTDIR/extender.crt, extender.key     serverAuth, DNS netaware-extender.<ns>.svc[.cluster.local]
#   OUTDIR/scheduler.crt, scheduler.key   clientAuth, CN=netaware-scheduler
# Idempotent: existing files are kept. Needs openssl.
set -euo pipefail
out="${1:?usage: make-certs.sh OUTDIR [NAMESPACE]}"
ns="${2:-netaware-system}"
days="${NETAWARE_CERT_DAYS:-365}"
mkdir -p "$out"
umask 077
cd "$out"
if [ ! -f ca.key ]; then
  openssl req -x509 -new -nodes -newkey rsa:3072 -sha256 -days "$((days * 3))" \
    -subj "/CN=netaware extender CA" -keyout ca.key -out ca.crt \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
fi
issue() {  # issue NAME SUBJECT EXTENSIONS
  local name="$1" subject="$2" ext="$3"
  [ -f "$name.crt" ] && return 0
  openssl req -new -nodes -newkey rsa:3072 -sha256 -subj "$subject" -keyout "$name.key" -out "$name.csr" 2>/dev/null
  printf '%b' "$ext" > "$name.ext"
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" -sha256 \
    -extfile "$name.ext" -out "$name.crt" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}
issue extender "/CN=netaware-extender.$ns.svc" \
  "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:netaware-extender.$ns.svc,DNS:netaware-extender.$ns.svc.cluster.local\n"
issue scheduler "/CN=netaware-scheduler" \
  "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n"
chmod 600 ./*.key
echo "certificates in $out (CA, extender serving, scheduler client)"
