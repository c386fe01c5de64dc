// Command approval runs deploys that wait for people. A deploy creates a
// waitpoint, mails its signed link to two approvers, and suspends until
// two different approvers have clicked (CountOf 2 over distinct sources);
// the links hit a webhook that delivers the signal with nothing but the
// token in the link. A deploy nobody approves in time is escalated to
// operator review, and an operator resumes it.
//
//	go run ./examples/approval                          # in-memory store
//	go run ./examples/approval -valkey 127.0.0.1:6379   # Valkey/Redis
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// Deploy ships one version once two approvers agreed.
type Deploy struct {
	Version string `json:"version"`
	// Timeout is how long approvers have before operators are asked.
	Timeout time.Duration `json:"timeout"`
}

// Kind implements flowfabric.Args.
func (Deploy) Kind() string { return "deploy" }

// mail is an approval request as it would go out by email.
type mail struct {
	To, Link string
}

var approvers = []string{"alice", "bob"}

func main() {
	addrs := flag.String("valkey", "", "comma-separated Valkey/Redis address(es); empty: the in-memory store")
	flag.Parse()
	store, closeStore, err := openStore(*addrs)
	if err != nil {
		log.Fatal(err)
	}
	defer closeStore()
	if err := run(store, func(s string) { fmt.Println(s) }); err != nil {
		log.Fatal(err)
	}
}

// openStore returns memstore, or valkeystore on the given server(s) under a
// fresh key prefix.
func openStore(addrs string) (flowfabric.Store, func(), error) {
	if addrs == "" {
		return memstore.New(nil), func() {}, nil
	}
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: strings.Split(addrs, ",")})
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", addrs, err)
	}
	store, err := valkeystore.New(client, &valkeystore.Options{Prefix: fmt.Sprintf("approval%d", time.Now().UnixNano())})
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return store, func() { store.Close(); client.Close() }, nil
}

// newKeyRing makes the key ring that signs the links. A real deployment
// loads the secret from its configuration, the same in every process.
func newKeyRing() (*flowfabric.KeyRing, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	return flowfabric.NewKeyRing(flowfabric.SigningKey{ID: "k1", Secret: secret})
}

// deployHandler asks for approval on its first run and deploys when
// resumed, naming who approved.
func deployHandler(outbox chan<- mail, webhook string) flowfabric.Handler[Deploy] {
	return flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[Deploy]) error {
		if !t.Resumed {
			// A pending waitpoint: its token can go out before the
			// handler suspends, and early clicks are kept for it.
			wp, err := t.CreateWaitpoint(ctx, &flowfabric.WaitpointOpts{TTL: time.Hour})
			if err != nil {
				return err
			}
			for _, who := range approvers {
				outbox <- mail{To: who, Link: webhook + "?token=" + url.QueryEscape(wp.Token)}
			}
			return flowfabric.Suspend(flowfabric.CountOf(2, flowfabric.DistinctSources, "approve"), &flowfabric.SuspendOpts{
				Waitpoint: wp,
				Reason:    flowfabric.SuspendForApproval,
				Timeout:   t.Args.Timeout,
				OnTimeout: flowfabric.TimeoutEscalate,
			})
		}
		sigs, err := t.Signals(ctx)
		if err != nil {
			return err
		}
		var by []string
		for _, s := range sigs {
			if !contains(by, string(s.Payload)) {
				by = append(by, string(s.Payload))
			}
		}
		if len(by) < 2 {
			return t.SetResult([]byte("deployed " + t.Args.Version + " (operator override)"))
		}
		return t.SetResult([]byte("deployed " + t.Args.Version + " (approved by " + strings.Join(by, ", ") + ")"))
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// webhook delivers an approval click: the token in the link says which
// waitpoint, the approver is who clicked (a real service takes it from
// the approver's login, not from the query). A click repeated by the same
// approver is a duplicate (idempotency key), not a second approval.
func webhook(engine *flowfabric.Engine) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, who := r.URL.Query().Get("token"), r.URL.Query().Get("who")
		d, err := engine.DeliverSignal(r.Context(), token, &flowfabric.SignalInput{
			Name: "approve", Source: "approver:" + who, Payload: []byte(who), IdempotencyKey: "approve:" + who,
		})
		switch {
		case errors.Is(err, flowfabric.ErrInvalidToken):
			http.Error(w, "invalid token", http.StatusForbidden)
		case errors.Is(err, flowfabric.ErrWaitpointClosed):
			http.Error(w, "this approval is closed", http.StatusGone)
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		default:
			_, _ = fmt.Fprint(w, d.Effect)
		}
	})
}

// browser is the approvers' HTTP client (no idle connections left
// behind when the example ends).
var browser = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

// click follows a link as approver who and returns what the webhook said.
func click(link, who string) (string, error) {
	resp, err := browser.Post(link+"&who="+who, "text/plain", nil) //nolint:noctx // a local example server
	if err != nil {
		return "", err
	}
	defer resp.Body.Close() //nolint:errcheck // a read-only response
	b, err := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b)), err
}

// run deploys twice, reporting each step through say in a fixed order.
func run(store flowfabric.Store, say func(string)) error {
	ctx := context.Background()
	ring, err := newKeyRing()
	if err != nil {
		return err
	}
	engine := flowfabric.New(store, &flowfabric.Config{WaitpointKeys: ring})
	if err := engine.Start(ctx); err != nil {
		return err
	}
	defer engine.Stop(ctx) //nolint:errcheck // best effort at exit

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: webhook(engine), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)  //nolint:errcheck // ends with Close
	defer srv.Close() //nolint:errcheck // best effort at exit

	outbox := make(chan mail, 8)
	w := flowfabric.NewWorker(engine, nil)
	flowfabric.AddHandler(w, deployHandler(outbox, "http://"+ln.Addr().String()+"/approve"))
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer w.Stop(ctx) //nolint:errcheck // best effort at exit

	// 1: both approvers click (alice twice), and the deploy goes out.
	first, err := engine.Submit(ctx, Deploy{Version: "v1.2", Timeout: time.Hour}, nil)
	if err != nil {
		return err
	}
	links := map[string]string{}
	for range approvers {
		m := <-outbox
		links[m.To] = m.Link
	}
	say("v1.2: approval mailed to alice and bob")
	// (clicks that arrive before the deploy suspends are kept for it; the
	// example waits so that what it prints is always the same)
	if err := waitSuspension(ctx, engine, first.ID, func(s *flowfabric.SuspensionSnapshot) bool { return s.ClosedAt.IsZero() }); err != nil {
		return err
	}
	for _, c := range []struct{ who, what string }{{"alice", "alice approved"}, {"alice", "alice clicked again"}, {"bob", "bob approved"}} {
		got, err := click(links[c.who], c.who)
		if err != nil {
			return err
		}
		say(c.what + ": " + got)
	}
	if err := report(ctx, engine, first.ID, say); err != nil {
		return err
	}

	// 2: nobody answers; the timeout escalates to an operator, who resumes.
	second, err := engine.Submit(ctx, Deploy{Version: "v1.3", Timeout: 200 * time.Millisecond}, nil)
	if err != nil {
		return err
	}
	for range approvers {
		links[(<-outbox).To] = ""
	}
	say("v1.3: approval mailed to alice and bob")
	if err := waitSuspension(ctx, engine, second.ID, func(s *flowfabric.SuspensionSnapshot) bool { return s.Escalated }); err != nil {
		return err
	}
	say("v1.3: nobody approved in time: escalated to operator review")
	if err := engine.Resume(ctx, second.ID); err != nil {
		return err
	}
	say("v1.3: an operator resumed it")
	if err := report(ctx, engine, second.ID, say); err != nil {
		return err
	}

	// A forged link is refused without the store being read.
	got, err := click("http://"+ln.Addr().String()+"/approve?token=ffw1.forged", "mallory")
	if err != nil {
		return err
	}
	say("forged link: " + got)
	return nil
}

// report waits for a deploy to end and says its result.
func report(ctx context.Context, engine *flowfabric.Engine, id flowfabric.ExecutionID, say func(string)) error {
	snap, err := engine.Wait(ctx, id, 5*time.Millisecond)
	if err != nil {
		return err
	}
	if snap.PublicState != flowfabric.PublicCompleted {
		return fmt.Errorf("deploy ended %s", snap.PublicState)
	}
	out, err := engine.Result(ctx, id)
	if err != nil {
		return err
	}
	say(string(out))
	return nil
}

// waitSuspension polls until the deploy's suspension satisfies ok.
func waitSuspension(ctx context.Context, engine *flowfabric.Engine, id flowfabric.ExecutionID, ok func(*flowfabric.SuspensionSnapshot) bool) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		s, err := engine.Suspension(ctx, id)
		if err != nil && !errors.Is(err, flowfabric.ErrSuspensionNotFound) {
			return err
		}
		if s != nil && ok(s) {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return errors.New("the suspension never reached the state waited for")
}
