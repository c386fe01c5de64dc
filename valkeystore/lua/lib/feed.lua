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

-- feed_value is v length-prefixed for a feed notice: "|<#v>:<v>".
local function feed_value(v)
  return '|' .. #v .. ':' .. v
end

-- feed_add appends an event of e at now to its partition's feed name
-- ('completions' or 'leases'): the execution's fields, then the feed's
-- (fields..., names and values), and publishes the event on
-- P:feed:<feed> (model.FeedEventNotifier): "<partition>\n<seq>", then
-- each of the entry's values in order as feed_value gives it, the feed's
-- own already in note (the caller's). The execution's flow (X:flow) is
-- read once per loaded record and kept in e.k.flow: only flow_add_member
-- sets it, after the events of its script.
local function feed_add(e, now, name, note, ...)
  local pfx, tag = string.match(e.k.base, '^(.*):exec:(%b{}):')
  local flow = e.k.flow
  if flow == nil then
    flow = redis.call('GET', e.k.base .. ':flow') or ''
    e.k.flow = flow
  end
  local at = S(now)
  local id = redis.call('XADD', pfx .. ':idx:' .. tag .. ':feed:' .. name, 'MAXLEN', '=', string.sub(A_feeds, 5), '0-*',
    'at', at, 'id', e.id, 'ns', e.ns, 'lane', e.lane, 'kind', e.kind, 'flow', flow, ...)
  -- the tag is '{fp:<partition>}', the entry id '0-<seq>'
  redis.call('PUBLISH', pfx .. ':feed:' .. name, string.sub(tag, 5, -2) .. '\n' .. string.sub(id, 3) .. feed_value(at) ..
    feed_value(e.id) .. feed_value(e.ns) .. feed_value(e.lane) .. feed_value(e.kind) .. feed_value(flow) .. note)
end

-- feed_completion records e's terminal outcome to (terminate): for a
-- success, the size of the result complete stored before it.
local function feed_completion(e, now, to)
  if string.byte(A_feeds, 1) ~= 99 then return end -- 'c'
  local bytes = 0
  if to == 'success' then bytes = redis.call('STRLEN', e.k.base .. ':result') end
  bytes = S(bytes)
  feed_add(e, now, 'completions', feed_value(to) .. feed_value(bytes), 'outcome', to, 'bytes', bytes)
end

-- feed_lease records a lease event of e (add_history, before it changes
-- anything; a renewal): its epoch, attempt and holder at that moment.
local function feed_lease(e, now, kind, reason)
  if string.byte(A_feeds, 3) ~= 108 then return end -- 'l'
  local epoch, attempt = S(e.epoch), S(e.cur_attempt)
  feed_add(e, now, 'leases', feed_value(kind) .. feed_value(epoch) .. feed_value(attempt) .. feed_value(e.lease_wi) ..
    feed_value(reason), 'event', kind, 'epoch', epoch, 'attempt', attempt, 'instance', e.lease_wi, 'reason', reason)
end
