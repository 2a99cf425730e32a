#!/usr/bin/env bash
# Installs the system packages vmplane's dev stack and tests run against, on Debian 12.
#
# Idempotent and quiet: when everything is present it checks a few binaries and exits in well
# under a second. Presence is judged by binaries, not dpkg, so a hand-built ClickHouse or QEMU
# counts. Postgres is only installed when no server answers on $VMPLANE_PG_DSN and no server
# binaries exist: internal/pgserver starts its own cluster under var/ from those binaries.
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

missing=()
have_clickhouse_server || missing+=(clickhouse-server)
have clickhouse-client || missing+=(clickhouse-client)
have qemu-system-x86_64 || missing+=(qemu-system-x86)
have qemu-img || missing+=(qemu-utils)
have kcat || missing+=(kcat)
if ! postgres_binaries && ! postgres_answers; then
	missing+=(postgresql)
fi

((${#missing[@]} == 0)) && exit 0

if [[ $(id -u) -ne 0 ]]; then
	echo "install.sh: missing ${missing[*]}; run as root or: sudo apt-get install ${missing[*]}" >&2
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
