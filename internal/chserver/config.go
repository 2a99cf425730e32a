package chserver

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"text/template"
)

// layout is where a started server keeps everything, and the ports it listens on.
type layout struct {
	Dir        string
	ListenHost string
	TCPPort    int
	HTTPPort   int
}

func (l layout) configPath() string { return filepath.Join(l.Dir, "config.xml") }
func (l layout) logDir() string     { return filepath.Join(l.Dir, "log") }

// configMarker begins the first comment of config.xml and users.xml: a server whose config.xml
// holds it is one of ours, whose users.d/ EnsureAnalyst may write.
const configMarker = "Written by vmplane's internal/chserver"

// The root element is <yandex>: 18.16 knows no other, and current releases still accept it.
// 18.16 refuses to start without mark_cache_size and has no default for
// uncompressed_cache_size; both are kept small for a laptop. On SIGTERM the server waits for
// connections to finish, and idle pooled ones never do: shutdown_wait_unfinished bounds that. No interserver, MySQL or
// PostgreSQL port is configured, so none is opened. The macro tells a client where this
// directory is (managedDir), so that it can add an analyst user to users.d/.
var configXML = template.Must(template.New("config.xml").Funcs(template.FuncMap{"x": xmlText}).Parse(`<?xml version="1.0"?>
<!-- ` + configMarker + ` on every start; edits are lost. -->
<yandex>
    <logger>
        <level>warning</level>
        <log>{{x .LogDir}}/clickhouse-server.log</log>
        <errorlog>{{x .LogDir}}/clickhouse-server.err.log</errorlog>
        <size>100M</size>
        <count>3</count>
    </logger>
    <listen_host>{{x .ListenHost}}</listen_host>
    <tcp_port>{{.TCPPort}}</tcp_port>
    <http_port>{{.HTTPPort}}</http_port>
    <path>{{x .Dir}}/data/</path>
    <tmp_path>{{x .Dir}}/tmp/</tmp_path>
    <user_files_path>{{x .Dir}}/user_files/</user_files_path>
    <format_schema_path>{{x .Dir}}/format_schemas/</format_schema_path>
    <users_config>users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mark_cache_size>268435456</mark_cache_size>
    <uncompressed_cache_size>268435456</uncompressed_cache_size>
    <max_concurrent_queries>100</max_concurrent_queries>
    <shutdown_wait_unfinished>2</shutdown_wait_unfinished>
    <macros>
        <` + configDirMacro + `>{{x .Dir}}</` + configDirMacro + `>
    </macros>
</yandex>
`))

// The default user is reachable from loopback only. There is no analyst user here: each
// database gets its own in users.d/ (EnsureAnalyst), allowed that database only.
// poll_interval is how often a connection handler looks up from waiting on its client; at the
// default 10 s a server with idle clients takes that long to stop.
const usersXML = `<?xml version="1.0"?>
<!-- ` + configMarker + ` on every start; edits are lost. -->
<yandex>
    <profiles>
        <default>
            <max_memory_usage>2000000000</max_memory_usage>
            <poll_interval>1</poll_interval>
        </default>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks>
                <ip>127.0.0.1</ip>
                <ip>::1</ip>
            </networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <quotas>
        <default>
            <interval>
                <duration>3600</duration>
                <queries>0</queries>
                <errors>0</errors>
                <result_rows>0</result_rows>
                <read_rows>0</read_rows>
                <execution_time>0</execution_time>
            </interval>
        </default>
    </quotas>
</yandex>
`

// write creates the directories and writes config.xml and users.xml.
func (l layout) write() error {
	for _, sub := range []string{"data", "tmp", "user_files", "format_schemas", "log"} {
		if err := os.MkdirAll(filepath.Join(l.Dir, sub), 0o755); err != nil {
			return err
		}
	}
	// The server refuses to start when its effective user does not own the data (since late
	// 2018). We run it as ourselves, so as root take back files another user left.
	if os.Geteuid() == 0 {
		err := filepath.WalkDir(l.Dir, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if fi, err := d.Info(); err == nil && fi.Sys().(*syscall.Stat_t).Uid != 0 {
				return os.Lchown(p, 0, 0)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("take ownership of %s: %w", l.Dir, err)
		}
	}
	var cfg bytes.Buffer
	err := configXML.Execute(&cfg, struct {
		layout
		LogDir string
	}{l, l.logDir()})
	if err != nil {
		return fmt.Errorf("render clickhouse config: %w", err)
	}
	if err := os.WriteFile(l.configPath(), cfg.Bytes(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(l.Dir, "users.xml"), []byte(usersXML), 0o644)
}

// logTail returns the end of the server's logs, for errors about a start that failed.
func (l layout) logTail() string {
	var out bytes.Buffer
	for _, name := range []string{"clickhouse-server.err.log", "stdout.log"} {
		b, err := os.ReadFile(filepath.Join(l.logDir(), name))
		if err != nil || len(b) == 0 {
			continue
		}
		if len(b) > 1500 {
			b = b[len(b)-1500:]
		}
		fmt.Fprintf(&out, "--- %s:\n%s\n", name, bytes.TrimSpace(b))
	}
	return out.String()
}

func xmlText(s string) (string, error) {
	var b bytes.Buffer
	err := xml.EscapeText(&b, []byte(s))
	return b.String(), err
}
