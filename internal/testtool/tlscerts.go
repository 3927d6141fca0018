package testtool

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// TLSCerts writes a test PKI into dir, every file PEM: a CA (ca.pem), a
// server certificate for 127.0.0.1, ::1 and localhost signed by it, for
// server and client authentication (server.pem, server-key.pem), a client certificate signed by it
// (client.pem, client-key.pem), and a CA unrelated to both (other-ca.pem).
// ECDSA P-256 keys, valid for a day.
func TLSCerts(dir string) error {
	ca, caKey, err := newCert(dir, "ca", nil, nil, func(t *x509.Certificate) {
		t.IsCA, t.BasicConstraintsValid = true, true
		t.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	})
	if err != nil {
		return err
	}
	if _, _, err := newCert(dir, "other-ca", nil, nil, func(t *x509.Certificate) {
		t.IsCA, t.BasicConstraintsValid = true, true
		t.KeyUsage = x509.KeyUsageCertSign
	}); err != nil {
		return err
	}
	if _, _, err := newCert(dir, "server", ca, caKey, func(t *x509.Certificate) {
		t.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		t.DNSNames = []string{"localhost"}
		// A broker of a cluster presents it to the other nodes too,
		// dialling their routes as a client.
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		t.KeyUsage = x509.KeyUsageDigitalSignature
	}); err != nil {
		return err
	}
	_, _, err = newCert(dir, "client", ca, caKey, func(t *x509.Certificate) {
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		t.KeyUsage = x509.KeyUsageDigitalSignature
	})
	return err
}

// newCert writes name.pem and name-key.pem into dir: a certificate shaped
// by shape, signed by parent's key (self-signed when parent is nil).
func newCert(dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, shape func(*x509.Certificate)) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, err
	}
	t := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "rawbatch test " + name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	shape(t)
	if parent == nil {
		parent, parentKey = t, key
	}
	der, err := x509.CreateCertificate(rand.Reader, t, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, name+"-key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}
