#!/usr/bin/env bash
# Installs the system packages vmplane's dev stack and tests run against, on Debian 12.
#
# Idempotent and quiet: when everything is present it checks a few binaries and exits in well
# under a second. Presence is judged by binaries, not dpkg, so a hand-built ClickHouse or QEMU
# counts, and Python modules by importing them. Postgres is only installed when no server
# answers on $VMPLANE_PG_DSN and no server binaries exist: internal/pgserver starts its own
# cluster under var/ from those binaries.
set -euo pipefail

dsn=${VMPLANE_PG_DSN:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}

have() { command -v "$1" >/dev/null 2>&1; }

# /usr/sbin is not on a non-root PATH, and Debian puts clickhouse-server there.
have_clickhouse_server() {
	have clickhouse-server || have clickhouse || [[ -x /usr/sbin/clickhouse-server ]]
}

postgres_answers() {
	if have pg_isready; then
		local rc=0
		pg_isready -q -t 2 -d "$dsn" || rc=$?
		# 0 accepting, 1 rejecting (starting up): either way a server is there.
		[[ $rc -eq 0 || $rc -eq 1 ]]
		return
	fi
	# postgres://user@host:port/db -> host, port (IPv6 literals in brackets are handled).
	local hostport=${dsn#*://}
	hostport=${hostport#*@}
	hostport=${hostport%%/*}
	hostport=${hostport%%\?*}
	local host port=5432
	if [[ $hostport == \[* ]]; then
		host=${hostport%%]*}
		host=${host#[}
		[[ $hostport == *]:* ]] && port=${hostport##*]:}
	else
		host=${hostport%%:*}
		[[ $hostport == *:* ]] && port=${hostport##*:}
	fi
	host=${host:-127.0.0.1}
	timeout 2 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null
}

postgres_binaries() {
	compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || have postgres
}

kernel_root=${VMPLANE_KERNEL_ROOT:-/usr/local/lib/vmplane/linux}

# A dynamically linked busybox (Debian's busybox package) cannot run in an initramfs without
# its libraries.
busybox_static() {
	[[ -x /bin/busybox ]] && ! ldd /bin/busybox >/dev/null 2>&1
}

# Debian's python3-* packages serve its own interpreter only: a python3 of pyenv earlier on PATH
# does not see them, so /usr/bin/python3 is asked by path.
python_module() {
	[[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c "import $1" >/dev/null 2>&1
}

# Unpacks the kernel package linux-image-amd64 depends on (boot/vmlinuz-*, lib/modules/*) into
# $kernel_root: into a new directory first, renamed into place whole.
guest_kernel() {
	local pkg tmp
	pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/ {print $2; exit}')
	[[ -n $pkg ]] || { echo "install.sh: no kernel package behind linux-image-amd64" >&2; exit 1; }
	tmp=$(mktemp -d)
	(cd "$tmp" && quiet apt-get download -q "$pkg")
	mkdir -p "$(dirname "$kernel_root")"
	rm -rf "$kernel_root.new"
	mkdir "$kernel_root.new"
	dpkg-deb --fsys-tarfile "$tmp"/"$pkg"_*.deb | tar -x -C "$kernel_root.new" --wildcards './boot/vmlinuz-*' './lib/modules/*'
	rm -rf "$tmp" "$kernel_root"
	mv "$kernel_root.new" "$kernel_root"
	echo "unpacked $pkg into $kernel_root"
}

missing=()
have_clickhouse_server || missing+=(clickhouse-server)
have clickhouse-client || missing+=(clickhouse-client)
have qemu-system-x86_64 || missing+=(qemu-system-x86)
have qemu-img || missing+=(qemu-utils)
have kcat || missing+=(kcat)
# The web console's browser test (ops/dev TestConsoleInBrowser) drives Debian's headless chromium.
have chromium || missing+=(chromium)
# The deploy kit's test (ops/deploy) checks the units with systemd-analyze, systemd-sysusers and
# systemd-tmpfiles, which a container without systemd lacks.
have systemd-analyze || missing+=(systemd)
# The QEMU guests' Linux (producers/agent/driver/qemu/linux): busybox for their initramfs, and a
# kernel with its modules from Debian's kernel package, unpacked under $kernel_root rather than
# installed, so that this machine's own boot is left alone.
busybox_static || missing+=(busybox-static)
compgen -G "$kernel_root/boot/vmlinuz-*" >/dev/null || missing+=(guest-kernel)
# The example agent in Python (examples/agent-python) and the test that runs it.
python_module confluent_kafka || missing+=(python3-confluent-kafka)
python_module avro || missing+=(python3-avro)
if ! postgres_binaries && ! postgres_answers; then
	missing+=(postgresql)
fi

((${#missing[@]} == 0)) && exit 0

if [[ $(id -u) -ne 0 ]]; then
	echo "install.sh: missing ${missing[*]}; run it as root (guest-kernel is Debian's kernel package, unpacked under $kernel_root)" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive

for pkg in "${missing[@]}"; do
	if [[ $pkg == postgresql ]]; then
		# Debian's main cluster would take 5432 with peer/scram auth and block the trust-auth
		# cluster internal/pgserver starts under var/; createcluster.conf includes this dir.
		mkdir -p /etc/postgresql-common/createcluster.d
		echo 'create_main_cluster = off' >/etc/postgresql-common/createcluster.d/vmplane.conf
	fi
done

# apt chatters on stderr even with -qq (debconf notes); show it only when something fails.
quiet() {
	local out
	if ! out=$("$@" 2>&1); then
		printf '%s\n' "$out" >&2
		echo "install.sh: failed: $*" >&2
		exit 1
	fi
}

quiet apt-get update -qq
for pkg in "${missing[@]}"; do
	if [[ $pkg == guest-kernel ]]; then
		guest_kernel
		continue
	fi
	echo "installing $pkg"
	quiet apt-get install -y -qq -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$pkg"
done

# The Debian clickhouse-server service uses /var/lib/clickhouse and the stock users.xml (no
# read-only analyst user). internal/chserver starts its own server with its own config when none
# answers, so the packaged service must not hold the port.
for pkg in "${missing[@]}"; do
	[[ $pkg == clickhouse-server ]] || continue
	if [[ -d /run/systemd/system ]]; then
		systemctl disable --now clickhouse-server >/dev/null 2>&1 || true
	else
		service clickhouse-server stop >/dev/null 2>&1 || true
		update-rc.d clickhouse-server disable >/dev/null 2>&1 || true
	fi
	echo "disabled the packaged clickhouse-server service"
done
