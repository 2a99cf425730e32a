#!/usr/bin/env bash
# Holds the import boundaries of docs/contributing.md. Data moves one way (gateway -> schemas <- processors,
# producers -> schemas, projectors -> schemas), and the pure state machines see nothing but the
# standard library and schemas. Dependencies are checked transitively (go list .Deps), so a
# boundary cannot be crossed through a helper package; a pure processor may reach schemas' own
# Avro library, but no I/O library even through schemas. Tests may import what they like, except
# ops/. Packages that do not exist yet are simply not checked.
set -euo pipefail
cd "$(dirname "$0")/.."

mod=$(go list -m)
violations=()

# Non-standard packages have a dot in their first path element.
nonstd() { [[ ${1%%/*} == *.* ]]; }
under() { [[ $1 == "$mod/$2" || $1 == "$mod/$2/"* ]]; }

# -e: a package that does not compile yet is still listed, with what go list could resolve.
listing=$(go list -e -f '{{.ImportPath}}|{{join .Deps " "}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}' ./...)

# What schemas itself needs, to name it when a pure processor gets I/O through it.
declare -A via_schemas=()
while IFS='|' read -r pkg deps _; do
	under "$pkg" schemas || continue
	for dep in $deps; do via_schemas[$dep]=1; done
done <<<"$listing"

# I/O a pure processor must not link, not even through schemas.
io_dep() {
	[[ $1 == net/http || $1 == github.com/twmb/franz-go* || $1 == github.com/jackc/* ||
		$1 == github.com/ClickHouse/* ]]
}

while IFS='|' read -r pkg deps imports testimports; do
	for dep in $deps; do
		# (a) schemas is the contract: it depends on nothing of ours.
		if under "$pkg" schemas && [[ $dep == "$mod/"* ]] && ! under "$dep" schemas; then
			violations+=("$pkg depends on $dep: schemas imports no package of this module")
		fi
		# (b) the pure state machines link no I/O library, not even through schemas.
		for core in vm host placement lease; do
			under "$pkg" "processors/$core" || continue
			if io_dep "$dep"; then
				how=""
				[[ -n ${via_schemas[$dep]:-} ]] && how=" (schemas pulls it in)"
				violations+=("$pkg depends on $dep$how: processors/$core is pure, no franz-go, pgx, net/http or clickhouse")
			fi
		done
		# (c) the gateway learns what it needs from events, never from a processor.
		if under "$pkg" gateway && under "$dep" processors; then
			violations+=("$pkg depends on $dep: the gateway never imports a processor")
		fi
		# (e) producers and projectors meet the processors only through topics.
		if { under "$pkg" producers || under "$pkg" projectors; } && under "$dep" processors; then
			violations+=("$pkg depends on $dep: producers and projectors import no processor")
		fi
		# (f) the gateway reads through interfaces it declares, served by readmodel, never by the
		# projector that writes the tables; readmodel meets the projectors only in the database.
		# projectors/journal is the one exception left: the gateway's History still returns the
		# journal's rows.
		if under "$pkg" gateway && under "$dep" projectors && ! under "$dep" projectors/journal; then
			violations+=("$pkg depends on $dep: the gateway reads through readmodel, never a projector")
		fi
		if under "$pkg" readmodel && under "$dep" projectors; then
			violations+=("$pkg depends on $dep: readmodel reads the tables a projector writes, it imports none")
		fi
	done
	# (b) and import only the standard library, schemas and their own packages. Checking every
	# package of the subtree this way leaves std and schemas as the only ways out of it.
	for core in vm host placement lease; do
		under "$pkg" "processors/$core" || continue
		for imp in $imports; do
			if nonstd "$imp" && ! under "$imp" schemas && ! under "$imp" "processors/$core"; then
				violations+=("$pkg imports $imp: processors/$core imports only the standard library and schemas")
			fi
		done
	done
	# (d) ops/ is the top of the graph: binaries and the dev stack, imported by
	# nothing else but benchmarks/, which drives the roles as they run in production.
	if ! under "$pkg" ops && ! under "$pkg" benchmarks; then
		for imp in $imports $testimports; do
			if under "$imp" ops; then
				violations+=("$pkg imports $imp: nothing outside ops/ and benchmarks/ imports ops/")
			fi
		done
	fi
	# (g) api holds the REST API's wire types for the gateway and its clients alike: the
	# standard library and, for a constant of the contract, schemas; nothing else.
	if under "$pkg" api; then
		for imp in $imports; do
			if nonstd "$imp" && ! under "$imp" schemas && ! under "$imp" api; then
				violations+=("$pkg imports $imp: api imports only the standard library and schemas")
			fi
		done
	fi
done <<<"$listing"

if ((${#violations[@]} > 0)); then
	printf 'import boundary violated: %s\n' "${violations[@]}" | sort -u >&2
	exit 1
fi
