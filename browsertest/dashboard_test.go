// Package browsertest drives the httpapi dashboard in headless Chromium
// (through the Chrome DevTools Protocol, with chromedp) against an engine
// on memstore. It is a module of its own so the core module's go.mod
// carries no browser dependency.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/httpapi"
	"github.com/flowfabric/flowfabric/memstore"
)

// ScreenshotEnv names a directory for the screenshots (default: the
// test's temporary directory, removed after the test).
const ScreenshotEnv = "FLOWFABRIC_SCREENSHOTS"

// BrowserEnv names a Chromium or Chrome binary to use instead of the
// first of chromium, chromium-browser, google-chrome and
// google-chrome-stable on PATH.
const BrowserEnv = "FLOWFABRIC_CHROMIUM"

const token = "browser-test-token"

// findBrowser returns the browser binary, or "" when there is none.
func findBrowser() string {
	if p := os.Getenv(BrowserEnv); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// fixture is an engine with finished, failed and waiting work, a flow,
// and the HTTP handler over it.
type fixture struct {
	engine    *flowfabric.Engine
	srv       *httptest.Server
	completed []flowfabric.ExecutionID // lane email, kind send
	failed    []flowfabric.ExecutionID // lane email, kind bounce
	billing   []flowfabric.ExecutionID // lane billing, completed
	parked    flowfabric.ExecutionID   // lane parked (no worker): waiting
	flow      *flowfabric.FlowResult   // root -> left (fails), root -> right, left+right -> join
}

func newFixture(t *testing.T, ctx context.Context) *fixture {
	t.Helper()
	e := flowfabric.New(memstore.New(nil), nil)
	if err := e.RegisterLane("flows", flowfabric.LaneConfig{Spread: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	w := flowfabric.NewWorker(e, &flowfabric.WorkerConfig{
		Lanes: []flowfabric.LaneID{"email", "billing", "flows"}, MaxConcurrent: 4})
	send := func(ctx context.Context, info *flowfabric.TaskInfo) error {
		if _, err := info.AppendFrame(ctx, "log", []byte("sending to "+string(info.Payload)), nil); err != nil {
			return err
		}
		return info.SetResultJSON(map[string]any{"delivered": true, "to": string(info.Payload)})
	}
	bounce := func(context.Context, *flowfabric.TaskInfo) error {
		return flowfabric.Permanent(errors.New("mailbox <full> & unreachable"))
	}
	for kind, f := range map[flowfabric.Kind]func(context.Context, *flowfabric.TaskInfo) error{
		"send": send, "bounce": bounce, "charge": send, "root": send, "left": bounce, "right": send, "join": send,
	} {
		if err := w.HandleRaw(kind, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })

	fx := &fixture{engine: e}
	submit := func(kind, lane, payload string) flowfabric.ExecutionID { return fx.submit(ctx, t, kind, lane, payload) }
	for i := range 6 {
		fx.completed = append(fx.completed, submit("send", "email", fmt.Sprintf(`"user%d@example.com"`, i)))
	}
	for i := range 3 {
		fx.failed = append(fx.failed, submit("bounce", "email", fmt.Sprintf(`"gone%d@example.com"`, i)))
	}
	for i := range 2 {
		fx.billing = append(fx.billing, submit("charge", "billing", fmt.Sprintf(`"invoice-%d"`, i)))
		submit("bounce", "billing", `"declined"`)
	}
	fx.parked = submit("send", "parked", `"<script>alert(1)</script>"`)

	fl := flowfabric.NewFlow()
	on := &flowfabric.SubmitOpts{Lane: "flows", RetryPolicy: flowfabric.NoRetries()}
	root := fl.AddRaw("root", []byte(`"start"`), on)
	left := fl.AddRaw("left", nil, on).After(root)
	right := fl.AddRaw("right", nil, on).AfterResult(root)
	fl.AddRaw("join", nil, on).After(left, right)
	res, err := e.SubmitFlow(ctx, fl, nil)
	if err != nil {
		t.Fatal(err)
	}
	fx.flow = res

	var all []flowfabric.ExecutionID
	all = append(append(append(all, fx.completed...), fx.failed...), fx.billing...)
	all = append(all, res.Executions...)
	for _, id := range all {
		if _, err := e.Wait(ctx, id, 0); err != nil {
			t.Fatalf("wait %s: %v", id, err)
		}
	}
	fx.srv = httptest.NewServer(httpapi.New(e, &httpapi.Options{Token: token}))
	t.Cleanup(fx.srv.Close)
	return fx
}

// submit submits one execution without retries.
func (fx *fixture) submit(ctx context.Context, t *testing.T, kind, lane, payload string) flowfabric.ExecutionID {
	t.Helper()
	res, err := fx.engine.SubmitRaw(ctx, flowfabric.Kind(kind), []byte(payload),
		&flowfabric.SubmitOpts{Lane: flowfabric.LaneID(lane), RetryPolicy: flowfabric.NoRetries()})
	if err != nil {
		t.Fatal(err)
	}
	return res.ID
}

// pageErrors collects what the page reported as broken: uncaught
// exceptions and security (Content-Security-Policy) or JavaScript log
// entries.
type pageErrors struct {
	mu   sync.Mutex
	errs []string
}

func (p *pageErrors) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg = "exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			msg += " " + ev.ExceptionDetails.Exception.Description
		}
	case *log.EventEntryAdded:
		if ev.Entry.Source == log.EntrySourceSecurity || ev.Entry.Source == log.EntrySourceJavascript {
			msg = string(ev.Entry.Source) + ": " + ev.Entry.Text
		}
	}
	if msg != "" {
		p.mu.Lock()
		p.errs = append(p.errs, msg)
		p.mu.Unlock()
	}
}

func (p *pageErrors) check(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.errs {
		t.Errorf("page error: %s", e)
	}
}

// TestDashboard drives the dashboard through its pages: the token
// prompt, the lanes with their counts and charts, a lane paused and
// resumed, a state and lane filter, one execution's details, a replay, a
// cancel backed out and then confirmed (the store ends it cancelled), and
// a flow's DAG.
func TestDashboard(t *testing.T) {
	bin := findBrowser()
	if bin == "" {
		t.Skip("no Chromium: none of chromium, chromium-browser, google-chrome, google-chrome-stable is on PATH " +
			"(apt-get install chromium, or set " + BrowserEnv + ")")
	}
	shots := os.Getenv(ScreenshotEnv)
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("browser %s; screenshots in %s", bin, shots)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fx := newFixture(t, ctx)

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.WindowSize(1400, 1000))...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	var perrs pageErrors
	if err := chromedp.Listen(bctx, perrs.listen); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	if _, err := chromedp.Call(bctx, log.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("enable the log domain: %v", err)
	}

	// step runs actions under a deadline of its own, so a wait that never
	// ends fails with the step's name.
	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// read runs one action that answers a value, under a deadline.
	read := func(name string, a chromedp.Action[string]) string {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		v, err := chromedp.Run(sctx, a)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return v
	}
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			buf, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return chromedp.Void{}, err
			}
			path := filepath.Join(shots, name+".png")
			t.Logf("screenshot %s", path)
			return chromedp.Void{}, os.WriteFile(path, buf, 0o644)
		}
	}
	// until waits for a JavaScript condition to hold (polled on every
	// animation frame).
	until := func(expr string) chromedp.Action[chromedp.Void] { return chromedp.Poll[chromedp.Void](expr) }
	hash := func(h string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[string]("location.hash = "+jsString(h))(ctx, tg)
			return err
		})
	}
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }

	// The page is served without the token and asks for it.
	step("token prompt",
		chromedp.Navigate(fx.srv.URL+"/"),
		chromedp.WaitVisible(css("#token-input")),
		shot("00-token"),
		chromedp.SendKeys(css("#token-input"), token),
		chromedp.Click(css("#token-ok")),
	)

	// Lanes: counts per state.
	step("lanes",
		chromedp.WaitVisible(css(`#lanes-table tr[data-lane="email"]`)),
		chromedp.WaitVisible(css(`#lanes-table tr[data-lane="parked"] .badge.unserved`)),
	)
	completed := read("completed", chromedp.Text(css(`#lanes-table tr[data-lane="email"] td[data-state="completed"]`)))
	failed := read("failed", chromedp.Text(css(`#lanes-table tr[data-lane="email"] td[data-state="failed"]`)))
	if completed != "6" || failed != "3" {
		t.Errorf("lane email: completed %q failed %q, want 6 and 3", completed, failed)
	}
	// The charts: once the page has a sample, more work completes, and
	// the throughput chart shows it.
	step("first sample", chromedp.WaitVisible(css(`#chart-backlog path[data-series="backlog"]`)))
	for i := range 8 {
		fx.billing = append(fx.billing, fx.submit(ctx, t, "charge", "billing", fmt.Sprintf(`"late-%d"`, i)))
	}
	step("throughput chart",
		until(`Number((document.getElementById('chart-throughput') || {dataset: {}}).dataset.peak) > 0`),
		shot("01-lanes"),
	)

	// Pause a lane from its row, with a reason; the engine says it is
	// paused; resume it.
	step("pause lane",
		chromedp.Click(css(`#lanes-table tr[data-lane="billing"] button.lane-pause`)),
		chromedp.WaitVisible(css("#confirm-ok")),
		chromedp.SendKeys(css("#confirm-reason"), "paused from the browser test"),
		chromedp.Click(css("#confirm-ok")),
		chromedp.WaitVisible(css(`#lanes-table tr[data-lane="billing"] .badge.paused`)),
		shot("01b-lane-paused"),
	)
	if st, err := fx.engine.LaneState(ctx, "billing"); err != nil || !st.Paused || st.Reason != "paused from the browser test" {
		t.Fatalf("after pause: %+v %v", st, err)
	}
	step("resume lane",
		chromedp.Click(css(`#lanes-table tr[data-lane="billing"] button.lane-resume`)),
		chromedp.WaitVisible(css("#confirm-ok")),
		chromedp.Click(css("#confirm-ok")),
		chromedp.WaitVisible(css(`#lanes-table tr[data-lane="billing"] button.lane-pause`)),
	)
	if st, err := fx.engine.LaneState(ctx, "billing"); err != nil || st.Paused {
		t.Fatalf("after resume: %+v %v", st, err)
	}

	// Executions filtered by state and lane.
	step("filter",
		chromedp.Click(css("#nav-executions")),
		chromedp.WaitVisible(css("#exec-table")),
		chromedp.SetValue(css("#f-state"), "failed"),
		chromedp.SetValue(css("#f-lane"), "email"),
		chromedp.Click(css("#f-apply")),
		until(`location.hash.includes('state=failed') && location.hash.includes('lane=email') &&
			document.querySelectorAll('#exec-table tbody tr').length === 3 &&
			[...document.querySelectorAll('#exec-table tbody tr')].every(r => r.dataset.state === 'failed')`),
		shot("02-executions-failed-email"),
	)

	pageIDs := func() []string {
		sctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		ids, err := chromedp.Run(sctx, chromedp.Evaluate[[]string](
			`[...document.querySelectorAll('#exec-table tbody tr')].map(r => r.dataset.id)`))
		if err != nil {
			t.Fatalf("page ids: %v", err)
		}
		return ids
	}
	if rows := pageIDs(); !sameIDs(rows, fx.failed) {
		t.Errorf("failed email rows %v, want %v", rows, fx.failed)
	}

	// A kind filter: lane billing's charges (the late ones included).
	step("kind filter",
		chromedp.SetValue(css("#f-state"), ""),
		chromedp.SetValue(css("#f-lane"), "billing"),
		chromedp.SendKeys(css("#f-kind"), "charge"),
		chromedp.Click(css("#f-apply")),
		until(fmt.Sprintf(`location.hash.includes('kind=charge') && document.querySelectorAll('#exec-table tbody tr').length === %d`,
			len(fx.billing))),
	)
	if ids := pageIDs(); !sameIDs(ids, fx.billing) {
		t.Errorf("billing charges listed %v, want %v", ids, fx.billing)
	}

	// Paging: lane email's nine executions, four to a page, each once.
	onPage := func(n, rows int) chromedp.Action[chromedp.Void] {
		return until(fmt.Sprintf(`(document.getElementById('page-info') || {}).textContent?.startsWith('page %d ') &&
			document.querySelectorAll('#exec-table tbody tr').length === %d`, n, rows))
	}
	step("page 1", hash("#/executions?lane=email&limit=4"), onPage(1, 4))
	paged := pageIDs()
	step("page 2", chromedp.Click(css("#page-next")), onPage(2, 4))
	paged = append(paged, pageIDs()...)
	step("page 3", chromedp.Click(css("#page-next")), onPage(3, 1),
		until(`document.getElementById('page-next').disabled`), shot("02b-executions-page-3"))
	paged = append(paged, pageIDs()...)
	step("back to page 2", chromedp.Click(css("#page-prev")), onPage(2, 4))
	if !sameIDs(paged, append(slices.Clone(fx.completed), fx.failed...)) {
		t.Errorf("pages listed %v, want lane email's %v and %v", paged, fx.completed, fx.failed)
	}

	// One execution: fields, attempts, lease history, frames, result.
	done := fx.completed[0]
	step("execution",
		hash("#/execution/"+url.PathEscape(done.String())),
		chromedp.WaitVisible(css(`#exec-state[data-state="completed"]`)),
		chromedp.WaitVisible(css(`#attempts-table`)),
		chromedp.WaitVisible(css(`#lease-table`)),
		chromedp.WaitVisible(css(`#frames-table`)),
		shot("03-execution-completed"),
	)
	result := read("result", chromedp.Text(css("#result")))
	frames := read("frames", chromedp.Text(css("#frames-table")))
	if !strings.Contains(result, `"delivered": true`) || !strings.Contains(frames, "sending to") {
		t.Errorf("result %q, frames %q", result, frames)
	}

	// A failed one shows its reason as text (markup characters included).
	step("failed execution",
		hash("#/execution/"+url.PathEscape(fx.failed[0].String())),
		chromedp.WaitVisible(css(`#exec-state[data-state="failed"]`)),
	)
	if failure := read("failure", chromedp.Text(css(`#exec-fields dd[data-field="failure"]`))); !strings.Contains(failure, "mailbox <full> & unreachable") {
		t.Errorf("failure shown as %q", failure)
	}

	// Replay it: confirmed, the engine counts a replay.
	step("replay",
		chromedp.Click(css("#act-replay")),
		chromedp.WaitVisible(css("#confirm-ok")),
		chromedp.Click(css("#confirm-ok")),
		until(`(document.querySelector('#exec-fields dd[data-field="replays"]') || {}).textContent?.startsWith('1 of')`),
	)
	if s, err := fx.engine.Describe(ctx, fx.failed[0]); err != nil || s.ReplayCount != 1 {
		t.Fatalf("after replay: %+v %v", s, err)
	}

	// Cancel: backed out first (nothing happens), then confirmed.
	parked := fx.parked.String()
	step("cancel backed out",
		hash("#/execution/"+url.PathEscape(parked)),
		chromedp.WaitVisible(css(`#exec-state[data-state="waiting"]`)),
		chromedp.WaitVisible(css(`#payload`)),
		chromedp.Click(css("#act-cancel")),
		chromedp.WaitVisible(css("#confirm-ok")),
		chromedp.Click(css("#confirm-no")),
		chromedp.WaitNotVisible(css("#confirm")),
	)
	if s, err := fx.engine.Describe(ctx, fx.parked); err != nil || s.PublicState != flowfabric.PublicWaiting {
		t.Fatalf("after backing out: %v %v", s, err)
	}
	if payload := read("payload", chromedp.Text(css("#payload"))); payload != `"<script>alert(1)</script>"` {
		t.Errorf("payload shown as %q", payload)
	}
	step("cancel confirmed",
		chromedp.Click(css("#act-cancel")),
		chromedp.WaitVisible(css("#confirm-ok")),
		chromedp.SendKeys(css("#confirm-reason"), "cancelled from the browser test"),
		shot("04-cancel-confirm"),
		chromedp.Click(css("#confirm-ok")),
		chromedp.WaitVisible(css(`#exec-state[data-state="cancelled"]`)),
		shot("05-cancelled"),
	)
	s, err := fx.engine.Describe(ctx, fx.parked)
	if err != nil || s.PublicState != flowfabric.PublicCancelled || s.CancellationReason != "cancelled from the browser test" {
		t.Fatalf("after cancel: %+v %v", s, err)
	}

	// Flows: the list links to the DAG, whose nodes carry their states.
	fid := fx.flow.ID.String()
	step("flows",
		chromedp.Click(css("#nav-flows")),
		chromedp.WaitVisible(css("#flows-finished")),
		chromedp.SetValue(css("#flows-finished"), "true"),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](`document.getElementById('flows-finished').dispatchEvent(new Event('change'))`)(ctx, tg)
			return err
		}),
		chromedp.WaitVisible(css(`#flows-table tr[data-id="`+fid+`"]`)),
		shot("06-flows"),
		chromedp.Click(css(`#flows-table tr[data-id="`+fid+`"] a`)),
		chromedp.WaitVisible(css("#dag")),
		until(`document.querySelectorAll('#dag g.node').length === 4 && document.querySelectorAll('#dag path.edge').length === 4`),
		shot("07-flow-dag"),
	)
	for _, id := range fx.flow.Executions {
		snap, err := fx.engine.Describe(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		sctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		attr, err := chromedp.Run(sctx, chromedp.AttributeValue(css(`#dag g.node[data-id="`+id.String()+`"]`), "data-state"))
		cancel()
		if err != nil || attr.Value != snap.PublicState.String() {
			t.Errorf("node %s (%s) drawn %q (%v), engine says %s", id, snap.Kind, attr.Value, err, snap.PublicState)
		}
	}
	// a node opens its execution
	root := fx.flow.Executions[0].String()
	step("node opens execution",
		chromedp.Click(css(`#dag g.node[data-id="`+root+`"] rect`)),
		chromedp.WaitVisible(css(`#exec-state[data-state="completed"]`)),
		until(`document.getElementById('exec-id').textContent === `+jsString(root)),
	)
	perrs.check(t)
}

// sameIDs reports whether got lists exactly the ids of want, each once,
// in any order.
func sameIDs(got []string, want []flowfabric.ExecutionID) bool {
	w := make([]string, len(want))
	for i, id := range want {
		w[i] = id.String()
	}
	g := slices.Clone(got)
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`, "\r", `\r`, "<", `\x3c`)
	return "'" + r.Replace(s) + "'"
}
