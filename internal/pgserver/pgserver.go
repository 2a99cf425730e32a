// Package pgserver finds or starts a PostgreSQL server for development and tests: it returns the
// configured server when one answers, and otherwise initializes and starts a local cluster from
// the installed binaries with its data under a var directory.
//
// It never touches schema: migrations belong to the projectors, and the only DDL here is
// CREATE DATABASE.
package pgserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/vmplane/vmplane/internal/filelock"
)

// Server is a PostgreSQL server that answers at DSN.
type Server struct {
	dsn  string
	stop func()
}

// DSN is the connection string the server answers at.
func (s Server) DSN() string { return s.dsn }

// Started reports whether Ensure started the server rather than finding it running.
func (s Server) Started() bool { return s.stop != nil }

// Stop stops the server if Ensure started it; a server that was already running is left alone.
func (s Server) Stop() {
	if s.stop != nil {
		s.stop()
	}
}

const (
	pingTimeout  = 2 * time.Second
	startTimeout = 60 * time.Second
)

// Ensure returns the server answering at dsn. When none answers and dsn names a loopback host,
// it starts a cluster under varDir/postgres (initializing it on first use) listening on
// 127.0.0.1 at the DSN's port, with trust authentication for the DSN's user.
//
// Postgres refuses to run as root, so as root the cluster belongs to the postgres system user,
// which is created if missing; varDir must then be reachable by that user.
func Ensure(ctx context.Context, dsn, varDir string, log *slog.Logger) (Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return Server{}, fmt.Errorf("parse postgres dsn: %w", err)
	}
	if err := ping(ctx, cfg); err == nil {
		return Server{dsn: dsn}, nil
	} else if portOpen(cfg.Host, cfg.Port) {
		// Something listens but will not let us in (auth, wrong database, not Postgres):
		// starting another server on the same port cannot help.
		return Server{}, fmt.Errorf("postgres at %s:%d does not accept the dsn: %w", cfg.Host, cfg.Port, err)
	}
	if !isLoopback(cfg.Host) {
		return Server{}, fmt.Errorf("no postgres answers at %s:%d and it is not local, so none is started", cfg.Host, cfg.Port)
	}

	if err := os.MkdirAll(varDir, 0o755); err != nil {
		return Server{}, fmt.Errorf("create var dir: %w", err)
	}
	unlock, err := filelock.Lock(ctx, filepath.Join(varDir, "postgres.lock"))
	if err != nil {
		return Server{}, err
	}
	defer unlock()
	// Another process may have started it while we waited for the lock.
	if err := ping(ctx, cfg); err == nil {
		return Server{dsn: dsn}, nil
	}

	c, err := newCluster(filepath.Join(varDir, "postgres"))
	if err != nil {
		return Server{}, err
	}
	if err := c.init(ctx, cfg.User, log); err != nil {
		return Server{}, err
	}
	if err := c.start(ctx, int(cfg.Port), log); err != nil {
		return Server{}, err
	}
	deadline := time.Now().Add(startTimeout)
	for {
		err := ping(ctx, cfg)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = c.stop(context.Background())
			return Server{}, fmt.Errorf("postgres started under %s but does not answer: %w", c.dir, err)
		}
		select {
		case <-ctx.Done():
			_ = c.stop(context.Background())
			return Server{}, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	log.Info("started postgres", "dir", c.dir, "port", cfg.Port, "version", filepath.Base(filepath.Dir(c.bin)))
	return Server{dsn: dsn, stop: func() {
		if err := c.stop(context.Background()); err != nil {
			log.Warn("stop postgres", "dir", c.dir, "err", err)
		}
	}}, nil
}

// StopDir stops a server started under varDir by Ensure in any process. It is a no-op when none
// is running there.
func StopDir(ctx context.Context, varDir string) error {
	dir := filepath.Join(varDir, "postgres")
	if _, err := os.Stat(filepath.Join(dir, "postmaster.pid")); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	c, err := newCluster(dir)
	if err != nil {
		return err
	}
	// pg_ctl status exits 3 when no server runs, e.g. after a crash left postmaster.pid behind.
	if err := c.run(ctx, "pg_ctl", "status", "-D", c.dir); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 3 {
			return nil
		}
	}
	return c.stop(ctx)
}

// EnsureDatabase creates database name on the server at dsn unless it exists, and returns dsn
// pointing at it.
func EnsureDatabase(ctx context.Context, dsn, name string) (string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", fmt.Errorf("connect postgres: %w", err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", fmt.Errorf("look up database %s: %w", name, err)
	}
	if !exists {
		_, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
		var pgErr *pgconn.PgError
		// duplicate_database: a concurrent caller won the race, which is what we wanted.
		if err != nil && (!errors.As(err, &pgErr) || pgErr.Code != "42P04") {
			return "", fmt.Errorf("create database %s: %w", name, err)
		}
	}
	return WithDatabase(dsn, name)
}

// FreshDatabase creates a new database named prefix followed by twelve
// random hex digits on the server at dsn, and returns dsn pointing at it
// and its name (for DropDatabase).
func FreshDatabase(ctx context.Context, dsn, prefix string) (string, string, error) {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := prefix + hex.EncodeToString(rnd[:])
	fresh, err := EnsureDatabase(ctx, dsn, name)
	return fresh, name, err
}

// WithDatabase returns dsn with its database replaced by name. Both URL and keyword/value forms
// are understood.
func WithDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse postgres dsn: %w", err)
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	// In keyword/value form the last occurrence of a key wins.
	quoted := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(name)
	return strings.TrimSpace(dsn) + " dbname='" + quoted + "'", nil
}

func ping(ctx context.Context, cfg *pgx.ConnConfig) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

func portOpen(host string, port uint16) bool {
	if strings.HasPrefix(host, "/") {
		return false
	}
	c, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(int(port))), pingTimeout)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// cluster is a data directory and the binaries that serve it.
type cluster struct {
	dir   string
	bin   string     // directory holding initdb, pg_ctl and postgres
	owner *user.User // nil: run as ourselves
}

func newCluster(dir string) (*cluster, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: abs}
	// A cluster only runs under the major version that created it.
	want := ""
	if b, err := os.ReadFile(filepath.Join(abs, "PG_VERSION")); err == nil {
		want = strings.TrimSpace(string(b))
	}
	if c.bin, err = findBinaries(want); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		if c.owner, err = systemUser("postgres"); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// findBinaries returns the bin directory of the newest Debian PostgreSQL install (or the one of
// major version want), falling back to the PATH.
func findBinaries(want string) (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
	for _, d := range dirs {
		if want != "" && filepath.Base(filepath.Dir(d)) != want {
			continue
		}
		if executable(filepath.Join(d, "initdb")) && executable(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil && want == "" {
		return filepath.Dir(p), nil
	}
	if want != "" {
		return "", fmt.Errorf("no PostgreSQL %s server binaries under /usr/lib/postgresql (the cluster needs them; run ops/install.sh)", want)
	}
	return "", errors.New("no PostgreSQL server binaries found (install postgresql, e.g. with ops/install.sh)")
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// systemUser looks up name, creating it as a system user when missing.
func systemUser(name string) (*user.User, error) {
	if u, err := user.Lookup(name); err == nil {
		return u, nil
	}
	out, err := exec.Command("useradd", "--system", "--user-group", "--no-create-home",
		"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("create system user %s: %w: %s", name, err, out)
	}
	return user.Lookup(name)
}

func (c *cluster) init(ctx context.Context, superuser string, log *slog.Logger) error {
	if _, err := os.Stat(filepath.Join(c.dir, "PG_VERSION")); err == nil {
		return nil
	}
	// initdb wants an empty or missing directory; a half-made one from a crashed initdb is ours.
	if err := os.RemoveAll(c.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	if err := c.chown(); err != nil {
		return err
	}
	if superuser == "" {
		superuser = "postgres"
	}
	log.Info("initializing postgres cluster", "dir", c.dir)
	if err := c.run(ctx, "initdb", "-D", c.dir, "-U", superuser, "--auth=trust",
		"--encoding=UTF8", "--locale=C"); err != nil {
		_ = os.RemoveAll(c.dir)
		return fmt.Errorf("initdb %s: %w", c.dir, err)
	}
	conf, err := os.OpenFile(filepath.Join(c.dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = conf.WriteString("\ninclude_if_exists = 'vmplane.conf'\n")
	if cerr := conf.Close(); err == nil {
		err = cerr
	}
	return err
}

func (c *cluster) start(ctx context.Context, port int, log *slog.Logger) error {
	if port == 0 {
		port = 5432
	}
	// Rewritten on every start so a changed port in the DSN takes effect. The data under var/
	// is disposable, so durability is traded for speed.
	settings := fmt.Sprintf(`listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
`, port, strings.ReplaceAll(c.dir, "'", "''"))
	if err := os.WriteFile(filepath.Join(c.dir, "vmplane.conf"), []byte(settings), 0o600); err != nil {
		return err
	}
	if err := c.chown(); err != nil {
		return err
	}
	// A server killed hard leaves postmaster.pid behind; pg_ctl and postgres cope with a stale
	// one by themselves, so only say what is going on.
	log.Debug("starting postgres", "dir", c.dir, "port", port)
	if err := c.run(ctx, "pg_ctl", "start", "-D", c.dir, "-l", filepath.Join(c.dir, "server.log"),
		"-w", "-t", strconv.Itoa(int(startTimeout/time.Second))); err != nil {
		tail, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return fmt.Errorf("start postgres in %s: %w\n%s", c.dir, err, tail)
	}
	return nil
}

func (c *cluster) stop(ctx context.Context) error {
	if err := c.run(ctx, "pg_ctl", "stop", "-D", c.dir, "-m", "fast", "-w"); err != nil {
		return fmt.Errorf("stop postgres in %s: %w", c.dir, err)
	}
	return nil
}

// run runs one of the cluster's binaries as the cluster's owner.
func (c *cluster) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	// The owner may not be able to enter our working directory, and the server inherits it.
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if c.owner != nil {
		uid, _ := strconv.Atoi(c.owner.Uid)
		gid, _ := strconv.Atoi(c.owner.Gid)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		cmd.Env = append(cmd.Env, "HOME="+c.dir, "USER="+c.owner.Username, "LOGNAME="+c.owner.Username)
	}
	// pg_ctl start leaves the postmaster running with its output in the log file, so waiting for
	// our pipes to close does not wait for the server.
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (c *cluster) chown() error {
	if c.owner == nil {
		return nil
	}
	uid, _ := strconv.Atoi(c.owner.Uid)
	gid, _ := strconv.Atoi(c.owner.Gid)
	err := filepath.WalkDir(c.dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("chown %s to %s: %w", c.dir, c.owner.Username, err)
	}
	// The owner must be able to walk down to the data directory.
	for d := filepath.Dir(c.dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		search := fi.Mode().Perm() & 0o001
		switch {
		case int(st.Uid) == uid:
			search = fi.Mode().Perm() & 0o100
		case int(st.Gid) == gid:
			search = fi.Mode().Perm() & 0o010
		}
		if search == 0 {
			return fmt.Errorf("postgres runs as user %s, which cannot enter %s (mode %v); put the var dir elsewhere",
				c.owner.Username, d, fi.Mode().Perm())
		}
		if d == "/" {
			return nil
		}
	}
}

// DropDatabase drops database name (closing its sessions) if it exists.
func DropDatabase(ctx context.Context, dsn, name string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect postgres: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}
