package model

import (
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// ---- budgets (budget partition) ----

// BudgetCreateParams creates a budget. It is idempotent: a budget that
// exists with the same definition reports Created false; one that exists
// with another definition is ErrIdempotencyConflict and changes nothing.
type BudgetCreateParams struct {
	ID BudgetID
	// Limits per dimension (1–MaxBudgetDimensions; names 1–64 bytes of
	// letters, digits, '_', '.', '-'). A dimension with both limits 0 is
	// tracked only.
	Limits map[string]BudgetLimit
	// ResetInterval, when set (1s–MaxBudgetResetInterval), zeroes the
	// usage every interval from the creation on (BudgetResetDue).
	ResetInterval time.Duration
	OnHardBreach  BudgetBreachAction
	Now           time.Time
}

// Validate checks every field.
func (p *BudgetCreateParams) Validate(cfg PartitionConfig) error {
	if UUID(p.ID).IsZero() {
		return invalidField("ID", "empty")
	}
	if len(p.Limits) == 0 || len(p.Limits) > MaxBudgetDimensions {
		return OutOfRange("Limits", len(p.Limits), "1.."+strconv.Itoa(MaxBudgetDimensions)+" dimensions")
	}
	for _, d := range sortedKeys(p.Limits) {
		l := p.Limits[d]
		if err := ValidateBudgetDimension("Limits", d); err != nil {
			return err
		}
		if l.Hard < 0 || l.Hard > MaxBudgetAmount {
			return OutOfRange("Limits["+d+"].Hard", l.Hard, "0.."+strconv.FormatInt(MaxBudgetAmount, 10))
		}
		if l.Soft < 0 || l.Soft > MaxBudgetAmount {
			return OutOfRange("Limits["+d+"].Soft", l.Soft, "0.."+strconv.FormatInt(MaxBudgetAmount, 10))
		}
	}
	if p.ResetInterval != 0 {
		if err := checkDuration("ResetInterval", p.ResetInterval, time.Second, MaxBudgetResetInterval); err != nil {
			return err
		}
	}
	if !p.OnHardBreach.Valid() {
		return invalidField("OnHardBreach", "unknown_action")
	}
	return checkNow(p.Now)
}

// BudgetCreateResult reports a create.
type BudgetCreateResult struct {
	// Created is false when the budget already existed (same definition).
	Created bool
}

// ValidateBudgetDimension checks a dimension name (field names the map).
func ValidateBudgetDimension(field, d string) error {
	if err := validName(field, d, 64, false); err != nil {
		return err
	}
	return nil
}

// BudgetReportParams adds usage to a budget (report_usage_and_check, and
// record_spend when Execution is set).
//
// Every delta is checked first: when one would take its dimension above a
// positive hard limit the report is refused (ReportHardBreach, the
// budget's hard breach count + 1, nothing else changes). Otherwise every
// delta applies, to the usage and, when Execution is set, to that
// execution's ledger; the first dimension in name order that is now above
// a positive soft limit is reported (ReportSoftBreach, soft breach count
// + 1). A DedupKey seen within BudgetDedupTTL makes the report
// ReportAlreadyApplied and changes nothing; the key is remembered only by
// a report that applied. Dimensions without limits are tracked.
type BudgetReportParams struct {
	ID BudgetID
	// Deltas to add (1–MaxBudgetDimensions, each 1–MaxBudgetAmount).
	Deltas map[string]int64
	// DedupKey (optional, an idempotency key's alphabet) makes a retried
	// report apply once.
	DedupKey string
	// Execution (optional) is charged in the budget's per-execution
	// ledger, which BudgetRelease gives back.
	Execution ExecutionID
	Now       time.Time
}

// Validate checks every field.
func (p *BudgetReportParams) Validate(cfg PartitionConfig) error {
	if UUID(p.ID).IsZero() {
		return invalidField("ID", "empty")
	}
	if len(p.Deltas) == 0 || len(p.Deltas) > MaxBudgetDimensions {
		return OutOfRange("Deltas", len(p.Deltas), "1.."+strconv.Itoa(MaxBudgetDimensions)+" dimensions")
	}
	for _, d := range sortedKeys(p.Deltas) {
		if err := ValidateBudgetDimension("Deltas", d); err != nil {
			return err
		}
		if v := p.Deltas[d]; v < 1 || v > MaxBudgetAmount {
			return OutOfRange("Deltas["+d+"]", v, "1.."+strconv.FormatInt(MaxBudgetAmount, 10))
		}
	}
	if err := validateKeyText("DedupKey", p.DedupKey, MaxIdempotencyKeyBytes); err != nil {
		return err
	}
	if !p.Execution.IsZero() {
		if err := cfg.CheckExecutionID(p.Execution); err != nil {
			return prefixField(err, "Execution.")
		}
	}
	return checkNow(p.Now)
}

// BudgetReportResult reports a report.
type BudgetReportResult struct {
	Outcome BudgetReportOutcome
	// Dimension, Usage and Limit describe a breach: Usage is the usage the
	// report reached (soft) or would have reached (hard), Limit the limit
	// passed.
	Dimension string
	Usage     int64
	Limit     int64
	// OnHardBreach is the budget's action (for the engine, on a hard
	// breach).
	OnHardBreach BudgetBreachAction
}

// BudgetReleaseParams gives back an execution's ledger: the usage of each
// dimension drops by what the execution was charged (not below 0) and
// the ledger is deleted.
type BudgetReleaseParams struct {
	ID        BudgetID
	Execution ExecutionID
	// Forget drops the ledger without giving its charge back (the usage
	// stays): what a deleted execution's ledgers need.
	Forget bool
	Now    time.Time
}

// Validate checks every field.
func (p *BudgetReleaseParams) Validate(cfg PartitionConfig) error {
	if UUID(p.ID).IsZero() {
		return invalidField("ID", "empty")
	}
	if err := cfg.CheckExecutionID(p.Execution); err != nil {
		return prefixField(err, "Execution.")
	}
	return checkNow(p.Now)
}

// BudgetReleaseResult reports a release.
type BudgetReleaseResult struct {
	// Released is false when the execution had no ledger (nothing
	// changed).
	Released bool
	// Returned is what the ledger held.
	Returned map[string]int64
}

// BudgetResetParams zeroes a budget's usage now (an operator's reset);
// the reset count goes up and the schedule is unchanged. Ledgers are kept
// (a later release does not take usage below 0).
type BudgetResetParams struct {
	ID  BudgetID
	Now time.Time
}

// Validate checks every field.
func (p *BudgetResetParams) Validate(cfg PartitionConfig) error {
	if UUID(p.ID).IsZero() {
		return invalidField("ID", "empty")
	}
	return checkNow(p.Now)
}

// BudgetResetResult reports a reset.
type BudgetResetResult struct {
	ResetCount  int
	NextResetAt time.Time // zero: no schedule
}

// BudgetResetDueParams resets, on one budget partition, up to Limit
// budgets whose next reset is due (≤ Now), in due order (then id), each as
// BudgetReset does, and moves each one's next reset to the first time of
// its schedule (creation + k·interval) after Now (scanner 8).
type BudgetResetDueParams struct {
	Partition int // 0 ≤ Partition < BudgetPartitions
	Limit     int // 1–1000
	Now       time.Time
}

// Validate checks every field.
func (p *BudgetResetDueParams) Validate(cfg PartitionConfig) error {
	if err := checkBudgetPartition(cfg, p.Partition); err != nil {
		return err
	}
	if err := checkLimit("Limit", p.Limit); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// BudgetResetDueResult reports the budgets reset.
type BudgetResetDueResult struct {
	Reset []BudgetID
	More  bool // due budgets remain
	// NextDueAt is the earliest next reset after the pass (zero: none).
	NextDueAt time.Time
}

// BudgetReconcileParams checks, on one budget partition, up to Limit
// budgets of its index in id order after After (exclusive; zero: from the
// start) (scanner 9): a budget with some dimension at or above a positive
// hard limit gets BreachedAt = Now when unmarked; one with none loses the
// mark. An index entry whose definition is gone is dropped; nothing else
// removes one (engine.md §9 bug 2).
type BudgetReconcileParams struct {
	Partition int
	After     BudgetID
	Limit     int
	Now       time.Time
}

// Validate checks every field.
func (p *BudgetReconcileParams) Validate(cfg PartitionConfig) error {
	if err := checkBudgetPartition(cfg, p.Partition); err != nil {
		return err
	}
	if err := checkLimit("Limit", p.Limit); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// BudgetReconcileResult reports a reconcile pass.
type BudgetReconcileResult struct {
	Checked  int
	Breached []BudgetID // newly marked
	Cleared  []BudgetID // mark removed
	Dropped  []BudgetID // index entries without a definition
	// Last is the last budget checked (the next call's After) when More.
	Last BudgetID
	More bool
}

// BudgetStatusParams reads a budget (ErrBudgetNotFound when absent).
type BudgetStatusParams struct {
	ID BudgetID
	// Execution, when set, also reads its ledger (BudgetStatus.Spend).
	Execution ExecutionID
	Now       time.Time
}

// Validate checks every field.
func (p *BudgetStatusParams) Validate(cfg PartitionConfig) error {
	if UUID(p.ID).IsZero() {
		return invalidField("ID", "empty")
	}
	if !p.Execution.IsZero() {
		if err := cfg.CheckExecutionID(p.Execution); err != nil {
			return prefixField(err, "Execution.")
		}
	}
	return checkNow(p.Now)
}

// ---- quotas (quota partition) ----

// QuotaCreateParams creates a quota policy. Idempotent like BudgetCreate.
// At least one of Rate and Concurrency is set.
type QuotaCreateParams struct {
	ID QuotaID
	// Rate admits at most Rate executions per bucket in any Window
	// (0: no rate limit; 1–MaxQuotaRate).
	Rate int
	// Window is the sliding window of the rate (1ms–MaxQuotaWindow; set
	// exactly when Rate is).
	Window time.Duration
	// Jitter bounds the random delay the engine adds to a rate refusal's
	// retry time (0–Window; only with Rate).
	Jitter time.Duration
	// Concurrency caps the admissions held per bucket (0: no cap;
	// 1–MaxQuotaRate).
	Concurrency int
	Now         time.Time
}

// Validate checks every field.
func (p *QuotaCreateParams) Validate(cfg PartitionConfig) error {
	if UUID(p.ID).IsZero() {
		return invalidField("ID", "empty")
	}
	if p.Rate < 0 || p.Rate > MaxQuotaRate {
		return OutOfRange("Rate", p.Rate, "0.."+strconv.Itoa(MaxQuotaRate))
	}
	if p.Concurrency < 0 || p.Concurrency > MaxQuotaRate {
		return OutOfRange("Concurrency", p.Concurrency, "0.."+strconv.Itoa(MaxQuotaRate))
	}
	if p.Rate == 0 && p.Concurrency == 0 {
		return invalidField("Rate", "no_limit")
	}
	if p.Rate == 0 {
		if p.Window != 0 {
			return invalidField("Window", "set_without_rate")
		}
		if p.Jitter != 0 {
			return invalidField("Jitter", "set_without_rate")
		}
	} else {
		if err := checkDuration("Window", p.Window, time.Millisecond, MaxQuotaWindow); err != nil {
			return err
		}
		if err := checkDuration("Jitter", p.Jitter, 0, p.Window); err != nil {
			return err
		}
	}
	return checkNow(p.Now)
}

// QuotaCreateResult reports a create.
type QuotaCreateResult struct {
	Created bool
}

// QuotaAdmitParams admits Execution to a bucket (check_admission_and_record).
//
// When the execution holds an admission in the bucket, the admission now
// carries Token and AdmittedAt = Now, nothing is charged
// (QuotaAlreadyAdmitted). Otherwise the window's entries at or before
// Now − Window are dropped; with a rate, a window holding Rate entries
// refuses (QuotaRateExceeded, RetryAfter = oldest entry + Window − Now,
// at least 0, plus min(Jitter, the policy's Jitter)); with a cap, Active
// ≥ Concurrency refuses (QuotaConcurrencyExceeded); otherwise the window
// gains an entry at Now and the bucket an admission (QuotaAdmitted).
// ErrQuotaNotFound when the policy does not exist.
type QuotaAdmitParams struct {
	ID  QuotaID
	Key string // the bucket ("" is the default bucket)
	// Execution is the admitted execution.
	Execution ExecutionID
	// Token names this admission (1–MaxAdmissionTokenBytes of letters,
	// digits, '_', '.', '-'); the claim stores it, the release names it.
	Token string
	// Jitter is the random part the caller drew for a rate refusal's
	// RetryAfter (stores are deterministic).
	Jitter time.Duration
	Now    time.Time
}

// Validate checks every field.
func (p *QuotaAdmitParams) Validate(cfg PartitionConfig) error {
	if UUID(p.ID).IsZero() {
		return invalidField("ID", "empty")
	}
	if err := ValidateQuotaKey("Key", p.Key); err != nil {
		return err
	}
	if err := cfg.CheckExecutionID(p.Execution); err != nil {
		return prefixField(err, "Execution.")
	}
	if err := ValidateAdmissionToken("Token", p.Token); err != nil {
		return err
	}
	if p.Token == "" {
		return invalidField("Token", "empty")
	}
	if err := checkDuration("Jitter", p.Jitter, 0, MaxQuotaWindow); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// QuotaAdmitResult reports an admission.
type QuotaAdmitResult struct {
	Outcome    QuotaOutcome
	RetryAfter time.Duration // QuotaRateExceeded only
	InWindow   int           // after the step
	Active     int           // after the step
}

// QuotaReleaseParams releases Execution's admission in a bucket: when it
// holds one and Token is empty or equals the admission's token, the
// admission is deleted (its slot frees; its window entry stays until it
// ages out). ErrQuotaNotFound when the policy does not exist.
type QuotaReleaseParams struct {
	ID        QuotaID
	Key       string
	Execution ExecutionID
	Token     string // "" releases whatever admission the execution holds
	Now       time.Time
}

// Validate checks every field.
func (p *QuotaReleaseParams) Validate(cfg PartitionConfig) error {
	if UUID(p.ID).IsZero() {
		return invalidField("ID", "empty")
	}
	if err := ValidateQuotaKey("Key", p.Key); err != nil {
		return err
	}
	if err := cfg.CheckExecutionID(p.Execution); err != nil {
		return prefixField(err, "Execution.")
	}
	if err := ValidateAdmissionToken("Token", p.Token); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// QuotaReleaseResult reports a release.
type QuotaReleaseResult struct {
	Released bool
}

// QuotaStatusParams reads one bucket (ErrQuotaNotFound when the policy
// does not exist; a bucket never used reads empty). It writes nothing.
type QuotaStatusParams struct {
	ID  QuotaID
	Key string
	Now time.Time
}

// Validate checks every field.
func (p *QuotaStatusParams) Validate(cfg PartitionConfig) error {
	if UUID(p.ID).IsZero() {
		return invalidField("ID", "empty")
	}
	if err := ValidateQuotaKey("Key", p.Key); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// QuotaReconcileParams tends one quota partition (scanner 10): in every
// bucket of every policy it drops the window entries at or before Now −
// Window, forgets buckets left with no entry and no admission, and
// reports up to Limit admissions admitted before StaleBefore (policy id,
// key, execution order) for the caller to check against their
// executions. The concurrency in use is the number of admissions, so
// there is no counter to recount.
type QuotaReconcileParams struct {
	Partition   int // 0 ≤ Partition < QuotaPartitions
	StaleBefore time.Time
	Limit       int
	Now         time.Time
}

// Validate checks every field.
func (p *QuotaReconcileParams) Validate(cfg PartitionConfig) error {
	if err := checkQuotaPartition(cfg, p.Partition); err != nil {
		return err
	}
	if err := checkOptionalTime("StaleBefore", p.StaleBefore); err != nil {
		return err
	}
	if err := checkLimit("Limit", p.Limit); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// QuotaReconcileResult reports a reconcile pass.
type QuotaReconcileResult struct {
	Trimmed int // window entries dropped
	Buckets int // buckets left
	Stale   []QuotaAdmission
	More    bool // more stale admissions than Limit
}

// ---- execution partition ----

// AdmissionBlockedParams lists the budget- and quota-blocked groups of an
// execution partition (lane, reason, budget or bucket; sorted by lane,
// reason, budget, quota, key), up to Limit groups.
type AdmissionBlockedParams struct {
	Partition int
	Limit     int
}

// Validate checks every field.
func (p *AdmissionBlockedParams) Validate(cfg PartitionConfig) error {
	if err := checkPartition(cfg, p.Partition); err != nil {
		return err
	}
	return checkLimit("Limit", p.Limit)
}

// AdmissionBlockedResult lists the groups.
type AdmissionBlockedResult struct {
	Groups []AdmissionGroup
	More   bool
}

// AdmissionUnblockParams returns to the eligible index, on one execution
// partition, the executions blocked on a budget of Budgets or a bucket of
// Quotas (at most Max of each bucket over all lanes; 0 means no bound),
// up to Limit in all, in this order: each budget in the order given, its
// lanes in name order, each lane's group oldest block first (then id);
// then each bucket likewise. Each is still blocked for that reason
// (checked in the step). An execution the Filter does not
// match stays blocked. Its cost grows with the groups named and the
// executions unblocked, not with those that stay blocked.
type AdmissionUnblockParams struct {
	Partition int
	Budgets   []BudgetID
	Quotas    []QuotaUnblock
	Filter    ScannerFilter
	Limit     int
	Now       time.Time
}

// QuotaUnblock names a bucket whose blocked executions may be unblocked,
// at most Max of them (0: all).
type QuotaUnblock struct {
	QuotaBucket
	Max int
}

// Validate checks every field.
func (p *AdmissionUnblockParams) Validate(cfg PartitionConfig) error {
	if err := checkPartition(cfg, p.Partition); err != nil {
		return err
	}
	if len(p.Budgets)+len(p.Quotas) > MaxPageSize {
		return OutOfRange("Budgets", len(p.Budgets)+len(p.Quotas), "at most "+strconv.Itoa(MaxPageSize)+" budgets and buckets")
	}
	for i, b := range p.Budgets {
		if UUID(b).IsZero() {
			return invalidField("Budgets["+strconv.Itoa(i)+"]", "empty")
		}
	}
	for i, q := range p.Quotas {
		f := "Quotas[" + strconv.Itoa(i) + "]"
		if UUID(q.ID).IsZero() {
			return invalidField(f+".ID", "empty")
		}
		if err := ValidateQuotaKey(f+".Key", q.Key); err != nil {
			return err
		}
		if q.Max < 0 {
			return OutOfRange(f+".Max", q.Max, "0 (no bound) or more")
		}
	}
	if err := p.Filter.Validate("Filter"); err != nil {
		return err
	}
	if err := checkLimit("Limit", p.Limit); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// AdmissionUnblockResult reports the unblocked executions.
type AdmissionUnblockResult struct {
	Unblocked []ExecutionID
	More      bool // Limit stopped the step with executions of the groups left
}

// QuotaReleasePendingParams reads up to Limit entries of an execution
// partition's quota release outbox, oldest first (then by execution id).
type QuotaReleasePendingParams struct {
	Partition int
	Limit     int
}

// Validate checks every field.
func (p *QuotaReleasePendingParams) Validate(cfg PartitionConfig) error {
	if err := checkPartition(cfg, p.Partition); err != nil {
		return err
	}
	return checkLimit("Limit", p.Limit)
}

// QuotaReleasePendingResult lists outbox entries.
type QuotaReleasePendingResult struct {
	Items []QuotaHold
	More  bool
}

// QuotaReleaseAckParams removes outbox entries (matched by execution and
// token; At is ignored) once their admissions were released. Entries
// already gone are ignored.
type QuotaReleaseAckParams struct {
	Partition int
	Items     []QuotaHold
}

// Validate checks every field.
func (p *QuotaReleaseAckParams) Validate(cfg PartitionConfig) error {
	if err := checkPartition(cfg, p.Partition); err != nil {
		return err
	}
	if len(p.Items) == 0 || len(p.Items) > MaxPageSize {
		return OutOfRange("Items", len(p.Items), "1.."+strconv.Itoa(MaxPageSize))
	}
	for i, it := range p.Items {
		f := "Items[" + strconv.Itoa(i) + "]."
		if err := cfg.CheckExecutionID(it.Execution); err != nil {
			return prefixField(err, f+"Execution.")
		}
		if it.Execution.Partition() != p.Partition {
			return invalidField(f+"Execution", "wrong_partition")
		}
		if err := ValidateAdmissionToken(f+"Token", it.Token); err != nil {
			return err
		}
	}
	return nil
}

// QuotaReleaseAckResult reports an ack.
type QuotaReleaseAckResult struct {
	Acked int
}

// ---- shared validation ----

// ValidateQuotaKey checks a quota bucket key: 0–MaxQuotaKeyBytes of valid
// UTF-8 without control characters.
func ValidateQuotaKey(field, k string) error {
	return validateKeyText(field, k, MaxQuotaKeyBytes)
}

// ValidateAdmissionToken checks an admission token: empty, or
// 1–MaxAdmissionTokenBytes of letters, digits, '_', '.', '-'.
func ValidateAdmissionToken(field, t string) error {
	if t == "" {
		return nil
	}
	return validName(field, t, MaxAdmissionTokenBytes, false)
}

// validateBudgets checks an execution's budget attachments.
func validateBudgets(field string, bs []BudgetID) error {
	if len(bs) > MaxExecutionBudgets {
		return OutOfRange(field, len(bs), "0.."+strconv.Itoa(MaxExecutionBudgets)+" budgets")
	}
	for i, b := range bs {
		if UUID(b).IsZero() {
			return invalidField(field+"["+strconv.Itoa(i)+"]", "empty")
		}
		if slices.Contains(bs[:i], b) {
			return invalidField(field+"["+strconv.Itoa(i)+"]", "duplicate")
		}
	}
	return nil
}

func validateKeyText(field, k string, maxLen int) error {
	if len(k) > maxLen {
		return invalidField(field, "too_long")
	}
	if !utf8.ValidString(k) {
		return invalidField(field, "invalid_utf8")
	}
	for _, r := range k {
		if r < 0x20 || r == 0x7f {
			return invalidField(field, "control_character")
		}
	}
	return nil
}

func checkBudgetPartition(cfg PartitionConfig, n int) error {
	if n < 0 || n >= cfg.WithDefaults().BudgetPartitions {
		return OutOfRange("Partition", n, "0.."+strconv.Itoa(cfg.WithDefaults().BudgetPartitions-1))
	}
	return nil
}

func checkQuotaPartition(cfg PartitionConfig, n int) error {
	if n < 0 || n >= cfg.WithDefaults().QuotaPartitions {
		return OutOfRange("Partition", n, "0.."+strconv.Itoa(cfg.WithDefaults().QuotaPartitions-1))
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
