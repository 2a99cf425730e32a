package crashloop

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/projectors/postgres"
)

// positions are a consumer's next offsets: committed to its group, or
// stored beside the rows for the Postgres projector.
type positions map[tp]int64

// groupPositions reads the committed offsets of every vmplane-* group, and
// the Postgres projector's positions from its consumer_offsets table (its
// Kafka group commits nothing). topics says which topics each consumes:
// those assigned to its members and those it committed.
func groupPositions(ctx context.Context, adm *kadm.Client, dsn string) (map[string]positions, map[string][]string, error) {
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list groups: %w", err)
	}
	var groups []string
	for _, g := range listed.Groups() {
		if strings.HasPrefix(g, "vmplane-") && g != postgres.DefaultGroup {
			groups = append(groups, g)
		}
	}
	described, err := adm.DescribeGroups(ctx, groups...)
	if err != nil {
		return nil, nil, fmt.Errorf("describe groups: %w", err)
	}
	pos, topics := map[string]positions{}, map[string][]string{}
	for _, g := range groups {
		seen := map[string]bool{}
		if d, ok := described[g]; ok {
			for t := range d.AssignedPartitions() {
				seen[t] = true
			}
		}
		committed, err := adm.FetchOffsets(ctx, g)
		if err != nil {
			return nil, nil, fmt.Errorf("fetch offsets of %s: %w", g, err)
		}
		p := positions{}
		committed.Each(func(o kadm.OffsetResponse) {
			if o.Err == nil && o.At >= 0 {
				p[tp{o.Topic, o.Partition}] = o.At
				seen[o.Topic] = true
			}
		})
		pos[g] = p
		for t := range seen {
			topics[g] = append(topics[g], t)
		}
		sort.Strings(topics[g])
	}
	stored, err := storedPositions(ctx, dsn)
	if err != nil {
		return nil, nil, err
	}
	pos[postgres.DefaultGroup] = stored
	topics[postgres.DefaultGroup] = append([]string(nil), postgres.Topics...)
	return pos, topics, nil
}

// storedPositions reads the Postgres projector's consumer_offsets.
func storedPositions(ctx context.Context, dsn string) (positions, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT topic, "partition", next_offset FROM consumer_offsets WHERE "group" = $1`, postgres.DefaultGroup)
	if err != nil {
		return nil, fmt.Errorf("read consumer_offsets: %w", err)
	}
	p := positions{}
	for rows.Next() {
		var t string
		var part int32
		var next int64
		if err := rows.Scan(&t, &part, &next); err != nil {
			return nil, err
		}
		p[tp{t, part}] = next
	}
	return p, rows.Err()
}

// behind is a consumer's partition whose position is below the target.
type behind struct {
	group string
	p     tp
	at    int64
	lso   int64
}

// checkOffsets is invariant 4: every partition's last stable offset, as
// listed once the stack has settled, is reached by every consumer of the
// partition within a bounded wait. A position short of it only by
// transaction markers or aborted records (which no read_committed consumer
// is handed, so none can commit past them) counts as reached; one short by
// committed records does not.
func checkOffsets(ctx context.Context, st *stack, dsn string, wait time.Duration) result {
	r := result{name: "4 every partition's last stable offset reached by its consumers"}
	adm := kadm.NewClient(st.admin)
	pos, topics, err := groupPositions(ctx, adm, dsn)
	if err != nil {
		r.failf("%v", err)
		return r
	}
	var all []string
	for _, ts := range topics {
		all = append(all, ts...)
	}
	lso, err := lastStable(ctx, st.admin, dedup(all)...)
	if err != nil {
		r.failf("list last stable offsets: %v", err)
		return r
	}
	lag := func() []behind {
		var out []behind
		for g, ts := range topics {
			for _, t := range ts {
				for p, end := range lso {
					if p.topic != t || end == 0 {
						continue
					}
					if at := pos[g][p]; at < end {
						out = append(out, behind{g, p, at, end})
					}
				}
			}
		}
		return out
	}
	// short sorts the partitions behind into those short only by offsets
	// no read_committed consumer is handed and those with records left.
	short := func(left []behind) (markersOnly int, unread []string) {
		from, to := map[tp]int64{}, map[tp]int64{}
		for _, b := range left {
			if at, ok := from[b.p]; !ok || b.at < at {
				from[b.p] = b.at
			}
			to[b.p] = b.lso
		}
		offsets, err := committedOffsets(ctx, st, from, to)
		for _, b := range left {
			n := 0
			for _, o := range offsets[b.p] {
				if o >= b.at {
					n++
				}
			}
			switch {
			case err != nil:
				unread = append(unread, fmt.Sprintf("%s %s at %d of %d (records between unknown: %v)", b.group, b.p, b.at, b.lso, err))
			case n == 0:
				markersOnly++
			default:
				unread = append(unread, fmt.Sprintf("%s %s at %d of %d: %d committed records not consumed", b.group, b.p, b.at, b.lso, n))
			}
		}
		return markersOnly, unread
	}
	deadline := time.Now().Add(wait)
	left := lag()
	markersOnly, unread := short(left)
	for len(unread) > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Second)
		if pos, _, err = groupPositions(ctx, adm, dsn); err != nil {
			r.failf("%v", err)
			return r
		}
		left = lag()
		markersOnly, unread = short(left)
	}
	sort.Strings(unread)
	for _, u := range unread {
		r.failf("%s", u)
	}
	var parts int
	names := make([]string, 0, len(topics))
	for g, ts := range topics {
		names = append(names, g)
		for _, t := range ts {
			for p, end := range lso {
				if p.topic == t && end > 0 {
					parts++
				}
			}
		}
	}
	sort.Strings(names)
	r.summary = fmt.Sprintf("groups %d (%s), non-empty partitions consumed %d: at the LSO %d, short only by markers/aborted records %d, short by unconsumed records %d",
		len(names), strings.Join(names, " "), parts, parts-len(left), markersOnly, len(unread))
	return r
}

// committedOffsets lists the offsets of the committed records of each
// partition p in [from[p], to[p]), in one read.
func committedOffsets(ctx context.Context, st *stack, from, to map[tp]int64) (map[tp][]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out := map[tp][]int64{}
	_, err := readRange(ctx, st.kcfg, from, to, func(r *kgo.Record) {
		p := tp{r.Topic, r.Partition}
		out[p] = append(out[p], r.Offset)
	})
	return out, err
}

func dedup(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
