package queue

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// The broker's authorisation uses NATS's decentralised authentication:
// an operator (its key signs the account), one account holding the
// queue's streams and buckets (its key signs the users), a system
// account the server requires, and one user per role, whose JWT carries
// the role's publish and subscribe permissions. A credentials file
// (<role>.creds: the user's JWT and its nkey seed, NATS's .creds format)
// is what a client presents; the server checks the JWT's signature
// chain and enforces its permissions. AuthConfig (auth.conf) is the
// server's side: the operator's JWT and the accounts' JWTs, as
// nats-server's configuration (a MEMORY resolver with the accounts
// preloaded), read by `rawbatch broker --auth DIR` and included by an
// existing nats-server's configuration.

// Roles are the credentials InitAuth writes, one file each
// (<role>.creds). submit.creds is the submitter DefaultSubmitter; more
// submitters, each confined to its own namespace, are added by
// AddSubmitter (submit-<name>.creds).
var Roles = []string{"submit", "work", "admin"}

// DefaultSubmitter is the namespace of submit.creds, and of every job a
// client without a submitter's credentials (work, admin, a broker
// without an authorisation) queues.
const DefaultSubmitter = "default"

// Tags of a user's JWT: its role, and for the submit role its
// namespace (the submitter's name). The client reads them to know its
// namespace; the broker enforces the permissions that go with them.
const (
	roleTag      = "rawbatch-role:"
	submitterTag = "rawbatch-submitter:"
)

// maxControlLine is the broker's longest protocol line in bytes with an
// authorisation: a CONNECT carries the user's JWT with its permissions.
const maxControlLine = 16 << 10

// Files in an authorisation directory (InitAuth).
const (
	AuthConfig   = "auth.conf"   // the server's side (nats-server configuration)
	accountSeed  = "account.nk"  // the account's signing seed: mints users
	operatorSeed = "operator.nk" // the operator's signing seed: signs accounts
	// RouteSecret holds the password the nodes of a cluster present to
	// each other on their routes (user routeUser), 32 random bytes in hex.
	RouteSecret = "route.pass"
)

// routeUser is the user name of a cluster's routes.
const routeUser = "rawbatch-route"

// ErrRefused: the broker refused this client: no or wrong credentials
// (authorization violation), a certificate it does not trust, or an
// operation its role may not do (permissions violation).
var ErrRefused = errors.New("refused by the broker")

// ErrOpenListen: a broker asked to listen beyond the loopback interface
// with neither an authorisation nor an explicit acceptance of an open
// broker (BrokerOptions.Insecure).
var ErrOpenListen = errors.New("an open broker beyond this host")

// ErrOpenRoutes: a cluster node asked to take routes beyond the loopback
// interface with neither an authorisation (the routes' password) nor
// BrokerOptions.Insecure.
var ErrOpenRoutes = errors.New("open cluster routes beyond this host")

// ErrOpenMonitor: a broker asked to serve its HTTP monitoring endpoints
// (which ask no credentials) beyond the loopback interface without
// BrokerOptions.Insecure.
var ErrOpenMonitor = errors.New("open monitoring endpoints beyond this host")

// InitAuth writes a new authorisation into dir (created 0700): auth.conf,
// the operator's and the account's seeds (operator.nk, account.nk) and
// <role>.creds for each of Roles, every file 0600. Existing files are not
// overwritten (an error wrapping fs.ErrExist) unless force (then every
// credential issued before stops working once a broker runs with the new
// auth.conf). It returns the paths written.
func InitAuth(dir string, force bool) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("queue: auth directory %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("queue: auth directory %s: %w", dir, err)
	}
	names := []string{AuthConfig, operatorSeed, accountSeed, RouteSecret}
	for _, r := range Roles {
		names = append(names, r+".creds")
	}
	if !force {
		for _, n := range names {
			if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
				return nil, fmt.Errorf("queue: %s: not overwriting an authorisation: %w", filepath.Join(dir, n), fs.ErrExist)
			}
		}
	}
	files, err := newAuth()
	if err != nil {
		return nil, fmt.Errorf("queue: new authorisation: %w", err)
	}
	var written []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := writeSecret(p, files[n]); err != nil {
			return written, fmt.Errorf("queue: %s: %w", p, err)
		}
		written = append(written, p)
	}
	return written, nil
}

// writeSecret writes b to path, mode 0600, through a temporary file
// renamed over it (never following a symlink at path).
func writeSecret(path string, b []byte) error {
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// newAuth makes a new operator, account, system account and one user per
// role, and returns the files' contents by name.
func newAuth() (map[string][]byte, error) {
	op, err := nkeys.CreateOperator()
	if err != nil {
		return nil, err
	}
	opPub, _ := op.PublicKey()
	oc := jwt.NewOperatorClaims(opPub)
	oc.Name = "rawbatch"
	acct, err := nkeys.CreateAccount()
	if err != nil {
		return nil, err
	}
	acctPub, _ := acct.PublicKey()
	sys, err := nkeys.CreateAccount()
	if err != nil {
		return nil, err
	}
	sysPub, _ := sys.PublicKey()
	oc.SystemAccount = sysPub
	opJWT, err := oc.Encode(op)
	if err != nil {
		return nil, err
	}
	ac := jwt.NewAccountClaims(acctPub)
	ac.Name = "RAWBATCH"
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	acctJWT, err := ac.Encode(op)
	if err != nil {
		return nil, err
	}
	sc := jwt.NewAccountClaims(sysPub)
	sc.Name = "SYS"
	sysJWT, err := sc.Encode(op)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	files[AuthConfig] = []byte(fmt.Sprintf(`# rawbatch broker authorisation (rawbatch broker --init-auth): the
# operator, the RAWBATCH account holding the queue, and the system account.
# Include it in an existing nats-server's configuration; keep this
# directory on the broker's host: its .nk files sign new credentials.
# The role users' JWTs (their permissions) make a CONNECT line longer
# than the default limit of 4 KiB.
max_control_line: %d
operator: %s
system_account: %s
resolver: MEMORY
resolver_preload: {
  %s: %s
  %s: %s
}
`, maxControlLine, opJWT, sysPub, acctPub, acctJWT, sysPub, sysJWT))
	if files[operatorSeed], err = op.Seed(); err != nil {
		return nil, err
	}
	if files[accountSeed], err = acct.Seed(); err != nil {
		return nil, err
	}
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return nil, err
	}
	files[RouteSecret] = []byte(hex.EncodeToString(secret[:]) + "\n")
	for _, role := range Roles {
		userJWT, seed, err := newUser(acct, role, DefaultSubmitter)
		if err != nil {
			return nil, err
		}
		if files[role+".creds"], err = jwt.FormatUserConfig(userJWT, seed); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// ValidSubmitter tells whether name may name a submitter: 1 to 32 of
// a-z, 0-9, - and _ (one subject token, one KV key prefix).
func ValidSubmitter(name string) bool {
	if name == "" || len(name) > 32 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// SubmitterCreds is the name of the credentials file of submitter name
// in an authorisation directory: submit.creds for DefaultSubmitter,
// else submit-<name>.creds.
func SubmitterCreds(name string) string {
	if name == DefaultSubmitter {
		return "submit.creds"
	}
	return "submit-" + name + ".creds"
}

// AddSubmitter writes the credentials of a new submitter name (confined
// to its own namespace: its jobs, their statuses and dead letters) into
// the authorisation directory dir, signed with its account seed, and
// returns the file's path. The broker needs no restart. An existing file
// is not replaced (an error wrapping fs.ErrExist) unless force.
func AddSubmitter(dir, name string, force bool) (string, error) {
	if !ValidSubmitter(name) {
		return "", fmt.Errorf("queue: submitter name %q: want 1 to 32 of a-z, 0-9, - and _", name)
	}
	p := filepath.Join(dir, SubmitterCreds(name))
	if _, err := os.Lstat(p); err == nil && !force {
		return "", fmt.Errorf("queue: %s: not overwriting a submitter's credentials: %w", p, fs.ErrExist)
	}
	acct, err := accountKey(dir)
	if err != nil {
		return "", err
	}
	defer acct.Wipe()
	userJWT, seed, err := newUser(acct, "submit", name)
	if err != nil {
		return "", fmt.Errorf("queue: submitter %s: %w", name, err)
	}
	b, err := jwt.FormatUserConfig(userJWT, seed)
	if err != nil {
		return "", fmt.Errorf("queue: submitter %s: %w", name, err)
	}
	if err := writeSecret(p, b); err != nil {
		return "", fmt.Errorf("queue: %s: %w", p, err)
	}
	return p, nil
}

// newUser returns the JWT (signed by acct) and the seed of a new user
// with role's permissions (for the submit role, confined to the
// namespace submitter).
func newUser(acct nkeys.KeyPair, role, submitter string) (string, []byte, error) {
	u, err := nkeys.CreateUser()
	if err != nil {
		return "", nil, err
	}
	pub, _ := u.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = "rawbatch-" + role
	uc.Tags.Add(roleTag + role)
	if role == "submit" {
		uc.Name += "-" + submitter
		uc.Tags.Add(submitterTag + submitter)
	}
	uc.Permissions = rolePermissions(role, pub, submitter)
	userJWT, err := uc.Encode(acct)
	if err != nil {
		return "", nil, err
	}
	seed, err := u.Seed()
	return userJWT, seed, err
}

// inboxPrefix is the reply subjects' prefix of the user whose public key
// is pub: each user reads only its own replies.
func inboxPrefix(pub string) string { return "_INBOX." + pub }

// queueStreams are the streams of the queue: the jobs, the dead letters
// and the buckets' (KV_<bucket>).
var queueStreams = []string{jobsStream, deadStream, "KV_" + leasesBucket, "KV_" + statusBucket, "KV_" + workersBucket}

// jsRead are the JetStream API subjects with which a client reads stream
// s: its info, a message by subject (and directly), its consumers' info,
// and consumers of its own (ordered consumers and watches: created,
// fetched from, deleted).
func jsRead(s string) []string {
	return []string{
		"$JS.API.STREAM.INFO." + s,
		"$JS.API.STREAM.MSG.GET." + s,
		"$JS.API.DIRECT.GET." + s,
		"$JS.API.DIRECT.GET." + s + ".>",
		"$JS.API.CONSUMER.INFO." + s + ".>",
		"$JS.API.CONSUMER.CREATE." + s,
		"$JS.API.CONSUMER.CREATE." + s + ".>",
		"$JS.API.CONSUMER.DURABLE.CREATE." + s + ".>",
		"$JS.API.CONSUMER.MSG.NEXT." + s + ".>",
		"$JS.API.CONSUMER.DELETE." + s + ".>",
	}
}

// rolePermissions are the publish and subscribe permissions of role
// (Roles) for the user whose public key is pub (for the submit role, the
// submitter whose namespace it is confined to): what each command of the
// role does on the broker (docs/distributed.md's table). The JetStream
// API subjects are allowed per stream of the queue (queueStreams): no
// role but admin creates, changes, purges or deletes another stream, nor
// uses the account- or server-wide API.
//
//   - every role: its own inbox (replies, watches, fetches), flow-control
//     replies, account info, the queue's streams' and consumers' info;
//   - submit: publishes jobs on its own subjects (rawbatch.job.*.<name>.*)
//     and their statuses under its own keys ($KV.rawbatch_status.<name>.>);
//     reads only its own statuses and dead letters: a direct get names
//     the subject (its namespace's), a consumer's filter subject is in
//     its create subject (its namespace's), and the API subjects that
//     take the subject in the request's body (STREAM.MSG.GET, the body
//     form of DIRECT.GET, the unfiltered CONSUMER.CREATE and
//     DURABLE.CREATE) are not allowed; it neither creates nor changes a
//     stream or bucket, takes no job, reads no lease and not the
//     workers' registry (their entries name the inputs they run), writes
//     no lease, registry entry or dead letter;
//   - work: reads the queue's streams (jsRead), creates them and the
//     buckets when missing, applies its timings to the buckets and the
//     class consumers, fetches jobs and acks them
//     ($JS.ACK.RAWBATCH_JOBS.>), writes leases, every namespace's
//     statuses, the registry and dead letters; it never purges, deletes
//     or changes the jobs and dead-letter streams (the bound);
//   - admin: everything.
func rolePermissions(role, pub, submitter string) jwt.Permissions {
	var p jwt.Permissions
	if role == "admin" {
		p.Pub.Allow.Add(">")
		p.Sub.Allow.Add(">")
		return p
	}
	p.Sub.Allow.Add(inboxPrefix(pub) + ".>")
	p.Pub.Allow.Add("$JS.API.INFO", "$JS.FC.>")
	switch role {
	case "submit":
		ns := submitter
		for _, st := range queueStreams {
			p.Pub.Allow.Add("$JS.API.STREAM.INFO."+st, "$JS.API.CONSUMER.INFO."+st+".>")
		}
		// Its own jobs: published, and asked for whether already queued.
		p.Pub.Allow.Add(jobsPrefix+"*."+ns+".*",
			"$JS.API.DIRECT.GET."+jobsStream+"."+jobsPrefix+"*."+ns+".*")
		// Its own statuses and dead letters: read (a direct get of one,
		// an ordered consumer or watch of all) and, for the statuses,
		// written.
		for _, r := range []struct{ stream, subj string }{
			{"KV_" + statusBucket, "$KV." + statusBucket + "." + ns + ".>"},
			{deadStream, deadPrefix + ns + ".>"},
		} {
			p.Pub.Allow.Add(
				"$JS.API.DIRECT.GET."+r.stream+"."+r.subj,
				"$JS.API.CONSUMER.CREATE."+r.stream+".*."+r.subj,
				"$JS.API.CONSUMER.MSG.NEXT."+r.stream+".>",
				"$JS.API.CONSUMER.DELETE."+r.stream+".>",
			)
		}
		p.Pub.Allow.Add("$KV." + statusBucket + "." + ns + ".>")
	case "work":
		for _, st := range queueStreams {
			p.Pub.Allow.Add(jsRead(st)...)
			p.Pub.Allow.Add("$JS.API.STREAM.CREATE." + st)
		}
		for _, b := range []string{leasesBucket, statusBucket, workersBucket} {
			p.Pub.Allow.Add("$JS.API.STREAM.UPDATE.KV_" + b)
		}
		p.Pub.Allow.Add(deadPrefix+">", "$JS.ACK."+jobsStream+".>",
			"$KV."+leasesBucket+".>", "$KV."+statusBucket+".>", "$KV."+workersBucket+".>")
		p.Pub.Deny.Add("$JS.API.CONSUMER.DELETE." + jobsStream + ".>")
	}
	return p
}

// authOptions returns the server options of the authorisation in dir
// (its auth.conf), checking the directory's and files' modes: the seeds
// must not be readable by others.
func authOptions(dir string) (*server.Options, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("queue: authorisation %s: %w (rawbatch broker --init-auth %s makes one)", dir, err, dir)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("queue: authorisation %s: not a directory", dir)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("queue: authorisation %s: mode %04o lets other users read its keys: chmod 700 %s", dir, st.Mode().Perm(), dir)
	}
	conf := filepath.Join(dir, AuthConfig)
	if _, err := os.Stat(conf); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("queue: authorisation %s: no %s (rawbatch broker --init-auth %s makes one)", dir, AuthConfig, dir)
	}
	o, err := server.ProcessConfigFile(conf)
	if err != nil {
		return nil, fmt.Errorf("queue: authorisation %s: %w", conf, err)
	}
	if len(o.TrustedOperators) == 0 || o.AccountResolver == nil {
		return nil, fmt.Errorf("queue: authorisation %s: no operator or resolver (not written by --init-auth)", conf)
	}
	return o, nil
}

// adminUser mints a short-lived admin user (JWT and seed) with the
// account's seed in dir, for the broker's own connection that creates
// the queue's streams and buckets.
func adminUser(dir string) (string, []byte, error) {
	acct, err := accountKey(dir)
	if err != nil {
		return "", nil, err
	}
	defer acct.Wipe()
	return newUser(acct, "admin", "")
}

// accountKey reads the account's signing key of the authorisation in
// dir (the caller wipes it).
func accountKey(dir string) (nkeys.KeyPair, error) {
	b, err := os.ReadFile(filepath.Join(dir, accountSeed))
	if err != nil {
		return nil, fmt.Errorf("queue: authorisation %s: %w", dir, err)
	}
	acct, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(b))))
	if err != nil {
		return nil, fmt.Errorf("queue: authorisation %s: %s: not an account seed", dir, accountSeed)
	}
	return acct, nil
}

// credsIdentity is who a credentials file says its user is.
type credsIdentity struct {
	// pub is the user's public key (its JWT's subject); role its role
	// tag ("" for credentials not written by rawbatch); submitter, for
	// the submit role, its namespace.
	pub, role, submitter string
}

// credsUser returns the identity of the user of the credentials file
// path (its JWT's subject and tags); the seed is not read here. The JWT's
// signature is the broker's to check: a client that edits its tags only
// misleads itself (the broker enforces the permissions it signed).
func credsUser(path string) (credsIdentity, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return credsIdentity{}, fmt.Errorf("credentials %s: %w", path, err)
	}
	tok, err := jwt.ParseDecoratedJWT(b)
	if err != nil {
		return credsIdentity{}, fmt.Errorf("credentials %s: not a NATS credentials file", path)
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		return credsIdentity{}, fmt.Errorf("credentials %s: not a NATS credentials file", path)
	}
	id := credsIdentity{pub: uc.Subject}
	for _, t := range uc.Tags {
		switch {
		case strings.HasPrefix(t, roleTag):
			id.role = strings.TrimPrefix(t, roleTag)
		case strings.HasPrefix(t, submitterTag):
			id.submitter = strings.TrimPrefix(t, submitterTag)
		}
	}
	if id.role == "submit" && !ValidSubmitter(id.submitter) {
		return credsIdentity{}, fmt.Errorf("credentials %s: a submitter's without a valid submitter name", path)
	}
	return id, nil
}

// routeSecret reads the routes' password of the authorisation in dir.
func routeSecret(dir string) (string, error) {
	p := filepath.Join(dir, RouteSecret)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("queue: authorisation %s: no %s for the cluster's routes (written by --init-auth; every node needs the same authorisation directory)", dir, RouteSecret)
	}
	if err != nil {
		return "", fmt.Errorf("queue: authorisation %s: %w", dir, err)
	}
	s := strings.TrimSpace(string(b))
	if len(s) < 32 {
		return "", fmt.Errorf("queue: authorisation %s: %s: too short a secret", dir, RouteSecret)
	}
	return s, nil
}

// loopback tells whether host (an IP address or a name) is this host's
// loopback interface only.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return false
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return false
		}
	}
	return true
}
