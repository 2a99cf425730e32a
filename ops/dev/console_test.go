package dev

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/vmplane/vmplane/producers/agent/driver/sim"
)

// TestConsoleInBrowser drives the web console (gateway/console) in Debian's
// headless chromium against a whole dev stack: a user signs in, deploys and
// watches the deploy finish live, stops the VM with its button, finds the
// actions it may not take disabled and another account's VM absent; an
// admin sees a host's capacity bar grow with a deploy. It saves a PNG of
// every page it visits and logs their paths.
func TestConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole stack and a browser")
	}
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not in PATH: run ops/install.sh as root (it installs Debian's chromium), or skip with -short")
	}
	pgDSN := envOr("VMPLANE_PG_DSN", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	chAddr := envOr("VMPLANE_CH_ADDR", "127.0.0.1:9000")
	db := "vmplane_console_" + randHex(4)
	t.Cleanup(func() { dropDatabases(pgDSN, chAddr, db) })
	cfg := Config{VarDir: t.TempDir(), KafkaAddr: freeAddr(t), HTTPAddr: freeAddr(t), PostgresDSN: pgDSN,
		ClickHouse: chAddr, Database: db, Hosts: 2, PingInterval: time.Second,
		// Slow enough that a deploy and a stop are seen in flight.
		SimLatency: sim.Durations{Start: 1500 * time.Millisecond, Stop: time.Second}}
	st, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	base := "http://" + cfg.HTTPAddr

	// Two user accounts; bob's VM must not show in alice's console.
	alice := userKey(t, base, st.AdminKey, "alice")
	bob := userKey(t, base, st.AdminKey, "bob")
	code, bobJob := call(t, "POST", base+"/v1/vms", bob, map[string]any{"name": "bob-vm", "offering": "small"})
	if code != http.StatusAccepted {
		t.Fatalf("bob's deploy: %d %v", code, bobJob)
	}
	bobVM := bobJob["vm_id"].(string)
	waitJob(t, base, bob, bobJob["id"].(string))

	ctx := browse(t, browser)
	shots := newShooter(t)
	run := func(what string, acts ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(actx, acts...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// click clicks sel, looking it up again when the page drew it anew
	// between the lookup and the click: a live page does at every event
	// ("Could not find node with given id").
	click := func(what, sel string) {
		t.Helper()
		for i := 0; ; i++ {
			actx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := chromedp.Do(actx, chromedp.Click(chromedp.CSS(sel)))
			cancel()
			if err == nil {
				return
			}
			if i < 4 && strings.Contains(err.Error(), "Could not find node") {
				continue
			}
			t.Fatalf("%s: %v", what, err)
		}
	}

	run("open", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#key")))
	shots.take(t, ctx, "signin")
	signIn(t, run, alice)
	if admin := jsBool(t, ctx, `!document.querySelector('[data-role="admin"]').hidden`); admin {
		t.Error("a user's nav shows the admin links")
	}

	// Deploy through the form; the VM's page follows the deploy live.
	run("deploy", goTo("#/deploy"), chromedp.WaitVisible(chromedp.CSS("#deploy-name")),
		chromedp.SendKeys(chromedp.CSS("#deploy-name"), "web-1"), chromedp.SetValue(chromedp.CSS("#deploy-offering"), "small"))
	shots.take(t, ctx, "deploy-form")
	// What the newest job of the VM page shows, each time it changes: its
	// state and its steps. The window keeps it only if the page is updated
	// in place, never reloaded.
	jsBool(t, ctx, `(() => { window.__seen = []; new MutationObserver(() => {
		const li = document.querySelector('#vm-jobs li'); if (!li) return;
		const s = li.dataset.state + ':' + li.querySelectorAll('ol.steps li').length;
		if (window.__seen[window.__seen.length - 1] !== s) window.__seen.push(s);
	}).observe(document.body, { subtree: true, childList: true, attributes: true }); return true; })()`)
	run("submit", chromedp.Click(chromedp.CSS("#deploy-submit")))
	waitJS(t, ctx, 10*time.Second, "the VM's page with its deploy job running", `location.hash.startsWith('#/vms/') && !!document.querySelector('#vm-jobs li[data-state="running"] ol.steps li')`)
	shots.take(t, ctx, "vm-page-live-job")
	waitJS(t, ctx, 20*time.Second, "the deploy succeeded, live", `document.querySelector('#vm-jobs li').dataset.state === 'succeeded' && document.querySelector('[data-field="state"]').textContent.includes('Active')`)
	seen := jsString(t, ctx, `(window.__seen || []).join(' ')`)
	if !strings.Contains(seen, "running:") || !strings.HasPrefix(seen[strings.LastIndex(seen, " ")+1:], "succeeded:") {
		t.Errorf("the deploy job as the page showed it: %q; want running, then succeeded, on one page", seen)
	}
	t.Logf("the deploy job as the page showed it (state:steps): %s", seen)
	vmID := strings.TrimPrefix(jsString(t, ctx, `location.hash`), "#/vms/")
	shots.take(t, ctx, "vm-page-active")

	// An Active VM cannot be started: its button is disabled, with the reason.
	checkDisabled(t, ctx, "start")

	// Stop it with its button; then stop is the disabled one.
	click("stop", `button[data-action="stop"]:not([disabled])`)
	waitJS(t, ctx, 20*time.Second, "the VM stopped", `document.querySelector('[data-field="state"]').textContent.includes('Stopped') && !!document.querySelector('#vm-jobs li[data-state="succeeded"] a') && document.querySelectorAll('#vm-jobs li[data-state="succeeded"]').length >= 2`)
	checkDisabled(t, ctx, "stop")
	shots.take(t, ctx, "vm-page-stopped")

	// The VM's history: once ClickHouse has the stop, the slider's first
	// position (Home) shows the VM as it was built, its last (End) stopped.
	waitHistory(t, base, alice, vmID, "Stopped")
	run("history first", chromedp.Focus(chromedp.CSS("#history-at")))
	waitJS(t, ctx, 10*time.Second, "the history's events", `Number(document.getElementById('history-at').max) >= 3`)
	run("history home", chromedp.KeyEvent(kb.Home))
	waitJS(t, ctx, 10*time.Second, "the VM as it was first", `document.getElementById('history-vm').dataset.pos === '0' && ['Building', 'Active'].includes(document.getElementById('history-vm').dataset.state)`)
	if when := jsString(t, ctx, `document.getElementById('history-when').textContent`); when == "now" || when == "" {
		t.Errorf("the history's first position reads %q; want an event's time", when)
	}
	shots.take(t, ctx, "vm-history-first")
	run("history end", chromedp.KeyEvent(kb.End))
	waitJS(t, ctx, 10*time.Second, "the VM as it is now", `document.getElementById('history-vm').dataset.pos === document.getElementById('history-at').max && document.getElementById('history-when').textContent === 'now' && document.getElementById('history-vm').dataset.state === 'Stopped'`)
	shots.take(t, ctx, "vm-history-now")

	// An action with a required parameter asks for it in a form beside the
	// buttons: it takes the focus, shows the API's refusal, and Escape
	// gives the focus back to the button.
	click("resize form", `button[data-action="resize"]:not([disabled])`)
	waitJS(t, ctx, 5*time.Second, "the resize form focused", `document.activeElement.id === 'param-offering' && document.activeElement.closest('label').textContent.startsWith('New offering') && document.querySelector('button[data-action="resize"]').getAttribute('aria-expanded') === 'true'`)
	run("resize submit", chromedp.SendKeys(chromedp.CSS("#param-offering"), "no-such-offering"), chromedp.Click(chromedp.CSS("#action-params-submit")))
	waitJS(t, ctx, 5*time.Second, "the refusal shown, the form kept", `document.getElementById('status').textContent !== '' && document.activeElement.id === 'param-offering'`)
	t.Logf("resizing to an unknown offering: %s", jsString(t, ctx, `document.getElementById('status').textContent`))
	shots.take(t, ctx, "vm-action-form")
	run("resize cancel", chromedp.KeyEvent(kb.Escape))
	waitJS(t, ctx, 5*time.Second, "the form closed, the focus back", `!document.getElementById('action-params') && document.activeElement.dataset.action === 'resize' && document.activeElement.getAttribute('aria-expanded') === 'false'`)
	if !jsBool(t, ctx, `document.querySelector('[data-field="state"]').textContent.includes('Stopped')`) {
		t.Error("the VM changed with a refused resize")
	}

	// The list shows alice's VM and not bob's, nor does bob's page open.
	run("vms", goTo("#/vms"), chromedp.WaitVisible(chromedp.CSS("#vm-"+vmID)))
	waitJS(t, ctx, 5*time.Second, "the list live", `document.getElementById('live').textContent === 'live'`)
	if jsBool(t, ctx, fmt.Sprintf(`!!document.getElementById('vm-%s') || document.body.textContent.includes('bob-vm')`, bobVM)) {
		t.Error("alice's VM list shows bob's VM")
	}
	shots.take(t, ctx, "vm-list")
	run("bob's vm", goTo("#/vms/"+bobVM))
	waitJS(t, ctx, 5*time.Second, "bob's VM not found", `document.querySelector('h1')?.textContent === 'Not found'`)
	shots.take(t, ctx, "other-account-vm-absent")

	run("jobs", goTo("#/jobs"))
	waitJS(t, ctx, 5*time.Second, "alice's jobs", `document.querySelectorAll('tr[data-job]').length >= 2`)
	shots.take(t, ctx, "jobs")
	click("job", `tr[data-job] a`)
	waitJS(t, ctx, 5*time.Second, "a job's page", `location.hash.startsWith('#/jobs/') && !!document.querySelector('ol.steps li')`)
	shots.take(t, ctx, "job-page")

	// The phone-width layout.
	run("phone", chromedp.EmulateViewport(390, 844), goTo("#/vms"), chromedp.WaitVisible(chromedp.CSS("#vm-"+vmID)))
	shots.take(t, ctx, "vm-list-phone")
	run("desktop", chromedp.EmulateViewport(1280, 800))

	// An admin's hosts page: a deploy makes a host's bar grow.
	run("sign out", chromedp.Click(chromedp.CSS("#signout")), chromedp.WaitVisible(chromedp.CSS("#key")))
	signIn(t, run, st.AdminKey)
	if !jsBool(t, ctx, `!document.querySelector('[data-role="admin"]').hidden`) {
		t.Error("an admin's nav hides the admin links")
	}
	run("hosts", goTo("#/hosts"))
	waitJS(t, ctx, 5*time.Second, "host bars", `document.querySelectorAll('tr[data-host] td.cpu svg').length === 2`)
	const used = `[...document.querySelectorAll('tr[data-host] td.cpu svg')].reduce((n, s) => n + Number(s.dataset.used), 0)`
	before := jsInt(t, ctx, used)
	shots.take(t, ctx, "hosts-before")
	code, job := call(t, "POST", base+"/v1/vms", st.AdminKey, map[string]any{"name": "big-1", "offering": "large"})
	if code != http.StatusAccepted {
		t.Fatalf("admin deploy: %d %v", code, job)
	}
	waitJS(t, ctx, 20*time.Second, "a host bar grown by 4 CPUs", fmt.Sprintf(`%s >= %d`, used, before+4))
	shots.take(t, ctx, "hosts-after-deploy")
	t.Logf("hosts' used CPU %d, then %d after a deploy of 4", before, jsInt(t, ctx, used))

	// A host's buttons: disable it, see it disabled, enable it again.
	const firstHost = `document.querySelector('tr[data-host]')`
	if !jsBool(t, ctx, firstHost+`.querySelector('[data-host-action="enable"]').disabled`) {
		t.Error("an enabled host's enable button is not disabled")
	}
	click("disable host", `tr[data-host] [data-host-action="disable"]`)
	waitJS(t, ctx, 10*time.Second, "the host disabled", firstHost+`.textContent.includes('Disabled') && !`+firstHost+`.querySelector('[data-host-action="enable"]').disabled`)
	shots.take(t, ctx, "hosts-one-disabled")
	click("enable host", `tr[data-host] [data-host-action="enable"]`)
	waitJS(t, ctx, 10*time.Second, "the host enabled again", firstHost+`.textContent.includes('Enabled')`)

	click("host", `tr[data-host] a`)
	waitJS(t, ctx, 5*time.Second, "a host's page", `location.hash.startsWith('#/hosts/') && !!document.querySelector('svg.bar')`)
	shots.take(t, ctx, "host-page")
	for _, p := range []string{"leases", "alerts", "offerings", "accounts"} {
		run(p, goTo("#/"+p))
		waitJS(t, ctx, 5*time.Second, p, `!!document.querySelector('h1') && document.querySelector('h1').textContent !== 'Not found' && !document.querySelector('main > p.muted:only-child')`)
		shots.take(t, ctx, p)
	}
	// An admin makes an account and a key for it; the key is shown once.
	run("account", goTo("#/accounts"), chromedp.WaitVisible(chromedp.CSS("#account-id")),
		chromedp.SendKeys(chromedp.CSS("#account-id"), "carol"), chromedp.Click(chromedp.CSS("#account-submit")))
	waitJS(t, ctx, 10*time.Second, "carol's account listed", `[...document.querySelectorAll('td')].some(td => td.textContent === 'carol')`)
	run("key", chromedp.WaitReady(chromedp.CSS(`#key-account option[value="carol"]`)), chromedp.SetValue(chromedp.CSS("#key-account"), "carol"), chromedp.Click(chromedp.CSS("#key-submit")))
	waitJS(t, ctx, 10*time.Second, "carol's new key shown", `document.getElementById('new-key').textContent.startsWith('vmp_')`)
	shots.take(t, ctx, "accounts-new-key")

	// The charts read the jobs that ended today from the history.
	run("charts", goTo("#/charts"))
	waitJS(t, ctx, 30*time.Second, "today's jobs in the chart", `!!document.querySelector('svg[data-chart="jobs"] rect.ok') && !!document.querySelector('svg[data-chart="durations"] rect.avg')`)
	shots.take(t, ctx, "charts-with-history")

	// A lease through its form; its page lists the host it holds.
	run("lease form", goTo("#/leases"), chromedp.WaitVisible(chromedp.CSS("#lease-name")),
		chromedp.SendKeys(chromedp.CSS("#lease-name"), "batch"), chromedp.Click(chromedp.CSS("#lease-submit")))
	waitJS(t, ctx, 20*time.Second, "the lease's page with its host", `location.hash.startsWith('#/leases/') && !!document.querySelector('a.lease-host')`)
	shots.take(t, ctx, "lease-page")
	// The leases page's timeline has a row for that host with the lease's bar.
	host := jsString(t, ctx, `document.querySelector('a.lease-host').textContent`)
	run("leases timeline", goTo("#/leases"))
	bar := fmt.Sprintf(`document.querySelector('#lease-timeline tr[data-timeline-host=%q] rect.lease-bar[data-lease="batch"]')`, host)
	waitJS(t, ctx, 5*time.Second, "the lease's bar on its host's row", bar+` && document.querySelector('#lease-timeline line.now')`)
	if label := jsString(t, ctx, bar+`.getAttribute('aria-label')`); !strings.HasPrefix(label, "batch: ") {
		t.Errorf("the lease's bar is labelled %q", label)
	}
	shots.take(t, ctx, "leases-timeline")
	if msg := jsString(t, ctx, `document.getElementById('status').textContent`); msg != "" {
		t.Errorf("status line at the end: %q", msg)
	}

	// A maintenance is a job: the host's row follows it, steps and all,
	// until it ends (its VMs may have nowhere to go: the other host is
	// the lease's, and then it fails with ErrorInMaintenance).
	run("hosts again", goTo("#/hosts"))
	waitJS(t, ctx, 5*time.Second, "host rows", `document.querySelectorAll('tr[data-host]').length === 2`)
	other := jsString(t, ctx, fmt.Sprintf(`[...document.querySelectorAll('tr[data-host]')].find(r => r.dataset.host !== %q).dataset.host`, host))
	row := fmt.Sprintf(`document.querySelector('tr[data-host=%q]')`, other)
	click("maintenance", fmt.Sprintf(`tr[data-host=%q] [data-host-action="prepare_for_maintenance"]`, other))
	waitJS(t, ctx, 10*time.Second, "the maintenance job on the host's row", row+`.querySelector('[data-maintenance] li[data-job]')`)
	waitJS(t, ctx, 60*time.Second, "the maintenance job ended, live", `['succeeded', 'failed'].includes(`+row+`.querySelector('[data-maintenance] li[data-job]').dataset.state)`)
	shots.take(t, ctx, "host-maintenance")
	t.Logf("maintenance of %s: %s", other, jsString(t, ctx, row+`.querySelector('[data-maintenance]').textContent`))
}

// waitHistory waits until the VM's history (ClickHouse) has an event with
// the state.
func waitHistory(t *testing.T, base, key, vmID, state string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, out := call(t, "GET", base+"/v1/vms/"+vmID+"/history", key, nil)
		if code == http.StatusOK {
			items, _ := out["items"].([]any)
			for _, it := range items {
				if e, _ := it.(map[string]any); e["vm_state"] == state {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the history of %s has no %s event: %d %v", vmID, state, code, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// userKey makes an account with a user key and returns the key.
func userKey(t *testing.T, base, admin, account string) string {
	t.Helper()
	if code, out := call(t, "POST", base+"/v1/accounts", admin, map[string]any{"id": account}); code/100 != 2 {
		t.Fatalf("account %s: %d %v", account, code, out)
	}
	code, out := call(t, "POST", base+"/v1/accounts/"+account+"/keys", admin, map[string]any{"role": "user"})
	if code/100 != 2 {
		t.Fatalf("key of %s: %d %v", account, code, out)
	}
	// A new key is usable once the projector has it.
	key := out["key"].(string)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if code, _ := call(t, "GET", base+"/v1/vms?limit=1", key, nil); code == http.StatusOK {
			return key
		}
		if time.Now().After(deadline) {
			t.Fatalf("key of %s not accepted", account)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// browse starts headless chromium for the test at 1280×800.
func browse(t *testing.T, path string) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.WindowSize(1280, 800),
		chromedp.NoSandbox, chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return ctx
}

// goTo moves the console to a page by its hash, as a click on a link does.
func goTo(hash string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[bool](`location.hash = `+strconv.Quote(hash)+`, true`)(ctx, t)
		return chromedp.Void{}, err
	}
}

func signIn(t *testing.T, run func(string, ...chromedp.Action[chromedp.Void]), key string) {
	t.Helper()
	run("sign in", chromedp.WaitVisible(chromedp.CSS("#key")), chromedp.SendKeys(chromedp.CSS("#key"), key),
		chromedp.Click(chromedp.CSS("#signin")), chromedp.WaitVisible(chromedp.CSS("#nav")))
}

// checkDisabled holds that the VM page's button for action is disabled and
// says why, to a pointer (title) and to a screen reader (aria-describedby).
func checkDisabled(t *testing.T, ctx context.Context, action string) {
	t.Helper()
	sel := fmt.Sprintf(`document.querySelector('button[data-action="%s"]')`, action)
	waitJS(t, ctx, 5*time.Second, action+" disabled", sel+`.disabled`)
	why := jsString(t, ctx, fmt.Sprintf(`(() => { const b = %s; const d = document.getElementById(b.getAttribute('aria-describedby')); return b.title + '|' + (d ? d.textContent : ''); })()`, sel))
	if title, desc, _ := strings.Cut(why, "|"); !strings.HasPrefix(title, "Not allowed") || title != desc {
		t.Errorf("%s: title %q, description %q", action, title, desc)
	}
}

func waitJS(t *testing.T, ctx context.Context, d time.Duration, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { try { return !!(`+expr+`); } catch (e) { return false; } })()`))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			status, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash + ' | ' + document.getElementById('status').textContent + ' | ' + document.querySelector('main').innerText.slice(0, 600)`))
			t.Fatalf("waiting for %s (%s): %v; page: %s", what, d, err, status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func jsBool(t *testing.T, ctx context.Context, expr string) bool {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func jsString(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func jsInt(t *testing.T, ctx context.Context, expr string) int {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[int](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// shooter saves numbered full-page PNGs into a directory: the test's own,
// or var/console-screenshots when VMPLANE_CONSOLE_SHOTS is set.
type shooter struct {
	dir string
	n   int
}

func newShooter(t *testing.T) *shooter {
	dir := t.TempDir()
	if os.Getenv("VMPLANE_CONSOLE_SHOTS") != "" {
		dir = filepath.Join("..", "..", "var", "console-screenshots")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// The pictures of an earlier run would mix with this one's.
		old, _ := filepath.Glob(filepath.Join(dir, "*.png"))
		for _, f := range old {
			_ = os.Remove(f)
		}
	}
	return &shooter{dir: dir}
}

func (s *shooter) take(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	// Let a redraw that the last step started land before the picture.
	time.Sleep(150 * time.Millisecond)
	// A value drawn as text where an element or nothing was meant.
	if bad := jsString(t, ctx, `(document.querySelector('main').innerText.match(/\bnull\b|\bundefined\b|\[object \w+\]|NaN/) || [''])[0]`); bad != "" {
		t.Errorf("%s: the page shows %q", name, bad)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	s.n++
	path := filepath.Join(s.dir, fmt.Sprintf("%02d-%s.png", s.n, name))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(path)
	t.Logf("screenshot %s", abs)
}
