-- feed: event feeds (model.FeedStore; memstore/feed.go)
--
-- Part of the library put in front of the scripts: see lua/README.md.
--
-- Partition T keeps each feed the store was built with in a STREAM,
-- I:feed:completions and I:feed:leases, whose entry ids are 0-<seq>: the
-- server's auto-sequence (XADD ... 0-*) numbers the events from 1 and
-- never reuses a number while the key lives, and MAXLEN = trims exactly,
-- so both stores keep the same events. An entry's fields are at (ms), id,
-- ns, lane, kind, flow ('' for none), then outcome and bytes (the
-- result's size) for a completion, or event (the lease event kind),
-- epoch, attempt, instance and reason for a lease event: always the same
-- fields in the same order. Each append publishes the event on
-- P:feed:<feed> (feed_ops.go's WatchFeed and WatchFeedEvents).
--
-- A_feeds is the store's option (Options.Feeds), which scripts.go adds to
-- the arguments of every script whose helpers read it and Store.run fills
-- in: '' when the store keeps no feed, else '<c>,<l>,<len>' with c 'c'
-- (completions) or '-', l 'l' (leases) or '-', and len the events a
-- partition's feed keeps. A store without feeds pays one comparison per
-- call of feed_completion or feed_lease and no command.

-- feed_add appends an event of e at now to its partition's feed name
-- ('completions' or 'leases'): the execution's fields, then the feed's
-- (fields..., names and values), and publishes the event on
-- P:feed:<feed> (model.FeedEventNotifier): "<partition>\n<seq>", then
-- "|<#value>:<value>" for each of the entry's values in order, the
-- feed's own already so in note (the caller's; one string.format each,
-- the cheapest way found to build it). The execution's flow (X:flow) is
-- read once per loaded record that may be in one (fl, record.go) and kept
-- in e.k.flow: only flow_add_member sets it, after the events of its
-- script.
local function feed_add(e, now, name, note, ...)
  local pfx, tag = string.match(e.k.base, '^(.*):exec:(%b{}):')
  local flow = e.k.flow
  if flow == nil then
    flow = ''
    if e.fl ~= 0 then flow = redis.call('GET', e.k.base .. ':flow') or '' end
    e.k.flow = flow
  end
  local at = S(now)
  local id = redis.call('XADD', pfx .. ':idx:' .. tag .. ':feed:' .. name, 'MAXLEN', '=', string.sub(A_feeds, 5), '0-*',
    'at', at, 'id', e.id, 'ns', e.ns, 'lane', e.lane, 'kind', e.kind, 'flow', flow, ...)
  -- the tag is '{fp:<partition>}', the entry id '0-<seq>'
  redis.call('PUBLISH', pfx .. ':feed:' .. name, string.format('%s\n%s|%d:%s|%d:%s|%d:%s|%d:%s|%d:%s|%d:%s%s',
    string.sub(tag, 5, -2), string.sub(id, 3), #at, at, #e.id, e.id, #e.ns, e.ns, #e.lane, e.lane, #e.kind, e.kind,
    #flow, flow, note))
end

-- feed_completion records e's terminal outcome to (terminate): for a
-- success, the size of the result complete stored before it.
local function feed_completion(e, now, to)
  if string.byte(A_feeds, 1) ~= 99 then return end -- 'c'
  local bytes = 0
  if to == 'success' then bytes = redis.call('STRLEN', e.k.base .. ':result') end
  bytes = S(bytes)
  feed_add(e, now, 'completions', string.format('|%d:%s|%d:%s', #to, to, #bytes, bytes), 'outcome', to, 'bytes', bytes)
end

-- feed_lease records a lease event of e (add_history, before it changes
-- anything; a renewal): its epoch, attempt and holder at that moment.
local function feed_lease(e, now, kind, reason)
  if string.byte(A_feeds, 3) ~= 108 then return end -- 'l'
  local epoch, attempt = S(e.epoch), S(e.cur_attempt)
  local wi = e.lease_wi
  feed_add(e, now, 'leases', string.format('|%d:%s|%d:%s|%d:%s|%d:%s|%d:%s', #kind, kind, #epoch, epoch, #attempt, attempt,
    #wi, wi, #reason, reason), 'event', kind, 'epoch', epoch, 'attempt', attempt, 'instance', wi, 'reason', reason)
end
