#!/bin/sh
# The compose deployment's certificates, made once by the one-shot `certs` service (an alpine
# container with openssl) into the `certs` volume every other service mounts read-only:
#
#   ca.crt                       the deployment's CA (brokers, gateways, etcd, every region)
#   mesh-ca.crt                  the mesh's own CA (mesh TLS checks no host names, so only this
#                                CA's certificates may be members: docs/security.md)
#   <region>-etcd-<n>.crt/.key   etcd member: server and peer (serverAuth, clientAuth), SAN its
#                                container name (the brokers check it against the endpoint as given)
#   <region>-broker-<n>.crt/.key CN edgeq-broker.<region>.<n>: the binary listener (serverAuth) and
#                                the follower's identity towards its leaders and etcd (clientAuth)
#   <region>-gateway.crt/.key    CN edgeq-gateway.<region>: HTTPS (SAN the container name and
#                                localhost, the published port) and the client towards the brokers
#   <region>-gateway-mesh.crt/.key  the gateway's mesh certificate, from mesh-ca
#
# Usage: gen-certs.sh DIR. EDGEQ_REGIONS (default "us-east eu-west ap-south") names the regions;
# EDGEQ_CERT_EXTRA_SANS (e.g. "DNS:edgeq.example.com,IP:10.0.0.5") is added to every certificate's
# SANs, for names beyond the compose network (test/deploy runs the set on 127.0.0.1 this way). Does nothing when DIR already holds a complete set (a restart keeps
# the CA, so nothing already issued stops verifying). EC P-256 keys, 825 days. Keys are mode 0600
# owned by uid 1000 (the image's `node` user; etcd and openssl run as root and read them anyway).
# A demo CA on one Docker host: every service mounts the whole volume. Use your own PKI (or
# cert-manager, deploy/k8s/components/cert-manager) anywhere that matters.
set -eu
DIR=${1:?usage: gen-certs.sh DIR}
REGIONS=${EDGEQ_REGIONS:-"us-east eu-west ap-south"}
EXTRA=${EDGEQ_CERT_EXTRA_SANS:+,$EDGEQ_CERT_EXTRA_SANS}
DAYS=825
mkdir -p "$DIR"
if [ -f "$DIR/.complete" ]; then
  echo "certs: $DIR already holds the deployment's certificates; keeping them"
  exit 0
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

newkey() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# ca NAME CN
ca() {
  newkey "$DIR/$1.key"
  openssl req -x509 -new -key "$DIR/$1.key" -sha256 -days "$DAYS" -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$DIR/$1.crt"
}

# leaf NAME CN SANS CA  (SANS: openssl subjectAltName syntax)
leaf() {
  newkey "$DIR/$1.key"
  openssl req -new -key "$DIR/$1.key" -subj "/CN=$2" -out "$TMP/$1.csr"
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=%s%s\n' "$3" "$EXTRA" > "$TMP/$1.ext"
  openssl x509 -req -in "$TMP/$1.csr" -CA "$DIR/$4.crt" -CAkey "$DIR/$4.key" -CAcreateserial \
    -days "$DAYS" -sha256 -extfile "$TMP/$1.ext" -out "$DIR/$1.crt" 2>/dev/null
}

ca ca "edgeq compose CA"
ca mesh-ca "edgeq compose mesh CA"
for r in $REGIONS; do
  for n in 1 2 3; do
    leaf "$r-etcd-$n" "$r-etcd-$n" "DNS:$r-etcd-$n,DNS:localhost,IP:127.0.0.1" ca
    leaf "$r-broker-$n" "edgeq-broker.$r.$n" "DNS:$r-broker-$n" ca
  done
  leaf "$r-gateway" "edgeq-gateway.$r" "DNS:$r-gateway,DNS:localhost,IP:127.0.0.1" ca
  leaf "$r-gateway-mesh" "edgeq-gateway-mesh.$r" "DNS:$r-gateway" mesh-ca
done
# The CAs' keys are not needed after this: nothing more is issued from them here.
rm -f "$DIR/ca.key" "$DIR/mesh-ca.key" "$DIR"/*.srl
chmod 0644 "$DIR"/*.crt
chmod 0600 "$DIR"/*.key
chown 1000:1000 "$DIR"/*.crt "$DIR"/*.key 2>/dev/null || true
touch "$DIR/.complete"
echo "certs: wrote the CA, the mesh CA and $(ls "$DIR"/*.key | wc -l) certificates to $DIR"
