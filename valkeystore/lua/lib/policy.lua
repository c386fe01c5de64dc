-- policy: the retry policy
--
-- Part of the library put in front of the scripts: see lua/README.md.

-- backoff_ms is model.RetryPolicy.BackoffMs, bit for bit: defaults, then
-- repeated float multiplication capped at the maximum, then truncation.
local function backoff_ms(e, retry_count)
  if e.retry_backoff == 'fixed' then
    if e.retry_delay_ms == 0 then return 1000 end
    return e.retry_delay_ms
  end
  local delay = e.retry_initial_ms
  if delay == 0 then delay = 1000 end
  local max_ms = e.retry_max_delay_ms
  if max_ms == 0 then max_ms = 60000 end
  local mult = tonumber(e.retry_multiplier) or 0
  if mult == 0 then mult = 2 end
  local i = 0
  while i < retry_count and delay < max_ms do
    delay = delay * mult
    i = i + 1
  end
  if delay > max_ms then delay = max_ms end
  return math.floor(delay)
end

-- fail_or_retry schedules a retry when the category is retryable (Go's
-- model.FailureCategory.Retryable decides) and retries remain, and fails e
-- terminally otherwise. The lease is already released.
local function fail_or_retry(e, now, reason, cat, retryable)
  if retryable and e.retry_count < e.retry_max then
    local until_ms = now + backoff_ms(e, e.retry_count)
    e.retry_count = e.retry_count + 1
    set_pending(e, 'retry', reason, '')
    make_runnable(e, now, until_ms, 'waiting_for_retry_backoff', 'pending_retry_attempt')
    return 'retry_scheduled', until_ms
  end
  e.failure_reason = reason
  e.failure_category = cat
  terminate(e, now, 'failed')
  return 'terminal_failed', 0
end
