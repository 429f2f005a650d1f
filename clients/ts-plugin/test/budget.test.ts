// Issue 25: the plugin never gets in the agent's way, never loses a line silently.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, renameSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fakeAgent, fakeSession, userMessage } from './fake-ctx.js'
import { setup, ready, until, spoolDir } from './helpers.js'
import { refusal } from '../src/web.js'

const signal = () => new AbortController().signal
const preStep = (ctx: any, agent: any, text: string) => {
  const user = userMessage(text)
  return ctx.waterfall('agent/pre-step', [{ agent, messages: [user], turn: 1, step: 1, signal: signal() }], async () => ({ kind: 'enter', messages: [user] }))
}
/** A somnid that takes a request and never answers it (SIGSTOP, a long GC pause). */
const hang = () => new Promise<never>(() => {})

test('a stalled somnid: a step waits at most the hook budget, session/flush not at all, flushes never chain, then nothing waits', async () => {
  // No bound below depends on the machine's speed: each is the request time-out (3 s), what a
  // step or a flush would take if it waited for the stalled somnid instead of its budget.
  const requestTimeoutMs = 3000
  const { ctx, somnid } = await setup({ hookTimeoutMs: 150, requestTimeoutMs, retryMinMs: 50, healthIntervalMs: 60_000 })
  try {
    await ready(ctx, somnid)
    for (const key of ['POST /v1/prompt', 'POST /v1/assoc/thought', 'POST /v1/sessions/*/messages']) somnid.routes.set(key, hang)
    // Health hangs too, but for a new connection's proof: the capture request reaches it.
    const health = somnid.routes.get('GET /v1/health')!
    somnid.routes.set('GET /v1/health', (body, req) => (req.headers['somnid-challenge'] ? health(body, req) : hang()))
    const s = fakeSession('s-slow')
    const agent = fakeAgent('s-slow')
    let started = Date.now()
    const decision = await preStep(ctx, agent, 'how do we deploy nginx?')
    const stepMs = Date.now() - started
    assert.equal(decision.kind, 'enter')
    assert.ok(stepMs < requestTimeoutMs, `a step waited ${stepMs} ms on a stalled somnid (budget 150 ms)`)
    for (let turn = 1; turn <= 3; turn++) {
      ctx.emit('session/event', s, { type: 'user/message', seq: turn * 10, time: Date.now(), data: userMessage(`turn ${turn}`) })
      started = Date.now()
      await ctx.parallel('session/flush', s)
      assert.ok(Date.now() - started < requestTimeoutMs, 'session/flush does not wait for somnid')
      ctx.emit('session/event', s, { type: 'turn/end', seq: turn * 10 + 1, time: Date.now(), data: { turn, reason: { kind: 'completed' } } })
    }
    // One capture request in flight, never a queue of them behind each other.
    await until(() => somnid.of('POST', '/v1/sessions/s-slow/messages').length > 0, 10_000, 'a capture request')
    await new Promise((r) => setTimeout(r, 100))
    assert.equal(somnid.of('POST', '/v1/sessions/s-slow/messages').length, 1)
    // Its time-out tells the client somnid is down: from then on nothing waits at all.
    await until(() => ctx.logs.some((l) => l.level === 'warn' && /unreachable/.test(l.text)), 4 * requestTimeoutMs, 'marked down')
    const asked = () => somnid.of('POST', '/v1/prompt').length + somnid.of('POST', '/v1/assoc/thought').length
    const before = asked()
    started = Date.now()
    await preStep(ctx, agent, 'and the nginx deploy again?')
    assert.equal(asked(), before, 'a client that knows somnid is down asks it nothing')
    assert.ok(Date.now() - started < requestTimeoutMs, 'a client that knows somnid is down fails fast')
    // somnid answers again: every line arrives, the re-sent ones with the same ids.
    for (const key of ['POST /v1/prompt', 'POST /v1/assoc/thought', 'GET /v1/health']) somnid.routes.delete(key)
    const fresh = (await import('./fake-somnid.js')).defaultRoutes()
    for (const key of ['POST /v1/prompt', 'POST /v1/assoc/thought', 'GET /v1/health', 'POST /v1/sessions/*/messages']) somnid.routes.set(key, fresh.get(key)!)
    await until(() => somnid.of('POST', '/v1/sessions/s-slow/messages').length >= 2, 20_000, 'delivered after recovery')
    const sent = somnid.of('POST', '/v1/sessions/s-slow/messages')
    const ids = sent.map((r) => r.body.messages.map((m: any) => m.id))
    assert.deepEqual(ids[0], ['e:10'], 'the first (lost) send')
    assert.deepEqual(ids[ids.length - 1], ['e:10', 'e:20', 'e:30'], 'the re-send carries the same ids: somnid writes them once')
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('the spool: lines of a run that ended while somnid was down (0600 in a 0700 folder) are delivered by the next run', async () => {
  const dir = spoolDir()
  const first = await setup({ capture: { spoolDir: dir } }, {}, { start: false })
  const s = fakeSession('s-spooled')
  first.ctx.emit('session/event', s, { type: 'user/message', seq: 1, time: 1_700_000_000_000, data: userMessage('said while somnid was down') })
  first.ctx.emit('session/event', s, { type: 'turn/end', seq: 2, time: 1_700_000_000_000, data: { turn: 1, reason: { kind: 'completed' } } })
  await first.ctx.parallel('session/flush', s)
  await first.ctx.dispose()
  const [file] = readdirSync(dir)
  assert.ok(file, 'the line is kept on disk')
  assert.equal(statSync(dir).mode & 0o777, 0o700)
  assert.equal(statSync(join(dir, file)).mode & 0o777, 0o600)
  assert.match(first.ctx.logText('warn'), /1 captured lines not delivered \(somnid is unreachable\); kept in/)
  // The run's process is gone (here: its file is named after a pid that does not run).
  renameSync(join(dir, file), join(dir, '999999999-gone.jsonl'))
  const second = await setup({ capture: { spoolDir: dir } })
  try {
    await until(() => second.somnid.of('POST', '/v1/sessions/s-spooled/messages').length === 1, 3000, 'the earlier run delivered')
    const [sent] = second.somnid.of('POST', '/v1/sessions/s-spooled/messages')
    assert.deepEqual(sent!.body.messages.map((m: any) => [m.text, m.id, m.timestamp]), [['said while somnid was down', 'e:1', new Date(1_700_000_000_000).toISOString()]])
    await until(() => readdirSync(dir).every((f) => statSync(join(dir, f)).size === 0), 2000, 'the spool emptied')
  } finally {
    await second.ctx.dispose()
    await second.somnid.stop()
  }
  assert.deepEqual(readdirSync(dir), [], 'a clean end with nothing pending leaves no file')
})

test('a skip is said again whenever somnid comes back (somnid forgets it when it restarts)', async () => {
  const { ctx, somnid } = await setup()
  try {
    await ready(ctx, somnid)
    const result = await ctx.commands.get('dream').handler({ commandId: 'c', agent: fakeAgent('s-skip'), rawInput: ' skip', attachments: [], signal: signal() })
    assert.equal(result.kind, 'success')
    assert.equal(somnid.of('POST', '/v1/sessions/s-skip/no-dream').length, 1)
    const port = somnid.port
    await somnid.stop()
    await until(() => ctx.logs.some((l) => /unreachable/.test(l.text)), 3000, 'down')
    somnid.port = port
    await somnid.start()
    await until(() => somnid.of('POST', '/v1/sessions/s-skip/no-dream').length === 2, 3000, 'the skip re-sent')
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('a tool answer somnid flags isError is an error result with its text', async () => {
  const { ctx, somnid } = await setup()
  try {
    await ready(ctx, somnid)
    somnid.routes.set('POST /v1/tools/add_intention', () => ({ body: { result: "There is no open intention 'x'; see list_intentions.", isError: true } }))
    const tool = ctx.tools.get('add_intention')!
    await assert.rejects(tool.execute({ what: 'x' }, { agent: fakeAgent('s'), signal: signal() } as any), (error: Error) => error.message === "There is no open intention 'x'; see list_intentions.")
    somnid.routes.set('POST /v1/tools/add_intention', () => ({ body: { result: 'added', isError: false } }))
    assert.equal(await tool.execute({ what: 'x' }, { agent: fakeAgent('s'), signal: signal() } as any), 'added')
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('the status routes answer 403 to a foreign Host or a cross-site Origin, like the harness /api', () => {
  const req = (headers: Record<string, string>) => ({ headers }) as any
  assert.equal(refusal(req({ host: '127.0.0.1:4100' })), undefined)
  assert.equal(refusal(req({ host: 'localhost:4100', origin: 'http://localhost:4100' })), undefined)
  assert.equal(refusal(req({ host: '[::1]:4100' })), undefined)
  assert.match(refusal(req({ host: 'evil.example:4100' }))!, /not a loopback/)
  assert.match(refusal(req({ host: '127.0.0.1:4100', origin: 'http://evil.example' }))!, /Origin/)
  assert.match(refusal(req({ host: '127.0.0.1:4100', origin: 'null' }))!, /Origin/)
  assert.match(refusal(req({ host: '127.0.0.1:4100', 'sec-fetch-site': 'cross-site' }))!, /cross-site/)
  assert.match(refusal(req({}))!, /not a loopback/)
})

test('the spool: a plugin reloaded in the same process while somnid is down delivers what the old instance kept', async () => {
  const dir = spoolDir()
  const first = await setup({ capture: { spoolDir: dir } }, {}, { start: false })
  const s = fakeSession('s-reload')
  first.ctx.emit('session/event', s, { type: 'user/message', seq: 1, time: 1_700_000_000_000, data: userMessage('before the reload') })
  await first.ctx.dispose()
  assert.equal(readdirSync(dir).length, 1, 'kept')
  const second = await setup({ capture: { spoolDir: dir } })
  try {
    await until(() => second.somnid.of('POST', '/v1/sessions/s-reload/messages').length === 1, 3000, 'delivered by the new instance')
  } finally {
    await second.ctx.dispose()
    await second.somnid.stop()
  }
  assert.deepEqual(readdirSync(dir), [])
})
