package hoststorm

import (
	"errors"
	"testing"
	"time"
)

func TestTableJudgesCountsAndTimes(t *testing.T) {
	ok := Sample{Connect: 2 * time.Second, Pinged: time.Second,
		Restart: Restart{Ready: time.Second, Up: 10},
		Outage:  Restart{Ready: time.Second, Left: 3, Probed: 2, Up: 10}}
	rows := table(Size{Hosts: 10, PingInterval: 5 * time.Second}, []Sample{ok}, nil)
	want := map[string]bool{
		"10 agents connecting at once: all Up":                       true,
		"restart: processors ready":                                  true,
		"restart: hosts Disconnected, Alert or Down":                 true,
		"restart: hosts investigated":                                true,
		"restart after an outage: processors ready":                  true,
		"restart after an outage: hosts Disconnected, Alert or Down": false,
		"restart after an outage: hosts investigated":                false,
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for _, r := range rows {
		pass, ok := want[r.Figure]
		if !ok || r.Pass != pass {
			t.Errorf("%s: pass %v, want a row that passes: %v (known %v)", r.Figure, r.Pass, pass, ok)
		}
	}
	if r := rows[0]; r.Value.Median != 2 || r.Limit.Median != 1 {
		t.Errorf("connect row %+v, want 2 s beside a limit of 1 s", r)
	}

	// A failed repetition makes every row an error row.
	for _, r := range table(Size{Hosts: 10, PingInterval: time.Second}, nil, errors.New("broker gone")) {
		if r.Pass || r.Err != "broker gone" {
			t.Errorf("%s: pass %v, err %q; want the repetition's error", r.Figure, r.Pass, r.Err)
		}
	}
}
