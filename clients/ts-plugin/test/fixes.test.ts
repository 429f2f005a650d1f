// Issue 15's fixes, each against the behaviour that broke in the real harness.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { LlmBridge, type SocketLike } from '../src/bridge.js'
import { fakeAgent, fakeSession, userMessage } from './fake-ctx.js'
import { setup, ready, tempDir, until } from './helpers.js'
import { webRoutes } from '../src/web.js'
import { capLines } from '../src/assoc.js'
import { summaryOf } from '../src/inject.js'

/** A socket that behaves as Node 22's WebSocket: a failed handshake fires `error` and never `close`. */
class Node22Socket implements SocketLike {
  readyState = 0
  sent: any[] = []
  private handlers = new Map<string, Array<(e: { data?: unknown }) => void>>()
  constructor(readonly url: string, readonly headers: Record<string, string>) {}
  send(data: string) { this.sent.push(JSON.parse(data)) }
  close() {
    if (this.readyState >= 2) return // closing a failed or closed socket fires nothing
    this.readyState = 3
    this.fire('close', {})
  }
  addEventListener(type: string, fn: (e: { data?: unknown }) => void) {
    this.handlers.set(type, [...(this.handlers.get(type) ?? []), fn])
  }
  failHandshake() {
    this.readyState = 3
    this.fire('error', {})
  }
  open() {
    this.readyState = 1
    this.fire('open', {})
  }
  fire(type: string, e: { data?: unknown }) {
    for (const fn of this.handlers.get(type) ?? []) fn(e)
  }
}

const quiet = { info() {}, warn() {}, error() {}, debug() {} }
const signal = () => new AbortController().signal
const preStep = (ctx: any, agent: any, text: string) => {
  const user = userMessage(text)
  return ctx.waterfall('agent/pre-step', [{ agent, messages: [user], turn: 1, step: 1, signal: signal() }], async () => ({ kind: 'enter', messages: [user] }))
}

test('fix 1: the bridge reconnects after a handshake that fails with error only (Node 22), and sends the token read at that time', async () => {
  const sockets: Node22Socket[] = []
  let token = 'old'
  const bridge = new LlmBridge(
    { stream: () => { throw new Error('unused') }, currentSelection: () => ({ provider: 'p', model: 'm' }) },
    {
      url: 'ws://127.0.0.1:1/v1/llm/bridge', headers: () => ({ authorization: `Bearer ${token}` }), retryMinMs: 10, retryMaxMs: 40,
      hostName: 'h', log: quiet, socket: (url, headers) => { const s = new Node22Socket(url, headers); sockets.push(s); return s },
    },
  )
  try {
    bridge.start()
    await until(() => sockets.length === 1, 2000, 'the first attempt')
    sockets[0]!.failHandshake() // somnid not up yet
    await until(() => sockets.length === 2, 2000, 'a second attempt after error-only failure')
    token = 'new'
    sockets[1]!.failHandshake()
    await until(() => sockets.length === 3, 2000, 'a third attempt')
    assert.deepEqual(sockets[2]!.headers, { authorization: 'Bearer new' })
    sockets[2]!.open()
    assert.equal(bridge.open, true)
    sockets[2]!.close() // somnid restarts
    await until(() => sockets.length === 4, 2000, 'reconnect after a close')
  } finally {
    bridge.close()
  }
})

test('fix 2: tools register when the token file appears after the harness started', async () => {
  const dir = tempDir('somnid-late-token-')
  const file = join(dir, 'token')
  const { ctx, somnid } = await setup({ tokenFile: file }, {}, { start: false })
  try {
    somnid.token = 'late-secret'
    await somnid.start()
    await until(() => ctx.logs.some((l) => l.level === 'error' && /has no somnid token/.test(l.text)), 3000, 'memory off without a token')
    assert.equal(ctx.tools.size, 0)
    assert.deepEqual(somnid.of('GET', '/v1/tools'), [], 'nothing but health is sent without a token')
    writeFileSync(file, 'late-secret\n') // somnid wrote its token after DSH started
    await until(() => ctx.tools.has('recall_memories'), 5000, 'tools registered after the token appeared')
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('fix 3: a failed tool call is an error (execute throws), not a success carrying the error text', async () => {
  const { ctx, somnid } = await setup()
  try {
    await ready(ctx, somnid)
    somnid.routes.set('POST /v1/tools/recall_memories', () => ({ status: 500, body: { type: 'x', title: 'boom', status: 500, code: 'storage', detail: 'disk full' } }))
    await assert.rejects(ctx.tools.get('recall_memories').execute({ query: 'q' }, { agent: fakeAgent('s'), signal: signal() }), /recall_memories failed: somnid answered 500 storage: disk full/)
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('fix 4: a wrong token is said once in the session and in the web state, and captured lines wait for the right one', async () => {
  const dir = tempDir('somnid-bad-token-')
  const file = join(dir, 'token')
  writeFileSync(file, 'wrong\n')
  const { ctx, somnid } = await setup({ tokenFile: file }, {}, { start: false })
  somnid.token = 'right'
  await somnid.start()
  try {
    await until(() => ctx.logs.some((l) => l.level === 'error' && /refuses the plugin's token/.test(l.text)), 3000, 'an error log')
    const agent = fakeAgent('s-bad')
    const d1: any = await preStep(ctx, agent, 'hello')
    assert.equal(d1.messages.length, 2)
    const notice = d1.messages[1]
    assert.equal(notice.source.form, 'notice')
    assert.ok(notice.source.summary.length <= 120)
    assert.match(notice.content[0].text, /refuses the plugin's token \(the program listening there could not prove it holds this token, so the token was not sent/)
    assert.ok(!somnid.requests.some((r) => r.headers.authorization === 'Bearer wrong'), 'the wrong token is never sent')
    const d2: any = await preStep(ctx, agent, 'again')
    assert.equal(d2.messages.length, 1, 'the notice comes once')
    const s = fakeSession('s-bad')
    ctx.emit('session/event', s, { type: 'user/message', seq: 1, time: 1_700_000_000_000, data: userMessage('keep me') })
    await ctx.parallel('session/flush', s)
    // The web page's state says why memory is off.
    const routes = webRoutes({ state: () => ({ reachable: false, bridge: false, dreaming: false, refused: 'x' }), onChange: () => () => true, sessions: () => [], injections: () => [], cost: () => ({ model: 'm/x', onlyOnCommand: false, maxTokensPerDream: 0, maxTokensPerDay: 0, dreamTokens: 0, todayTokens: 0 }), skip: async () => ({ ok: true, text: '' }) })
    assert.ok(routes.some((r) => r.path === '/dsh-somnid/state'))
    writeFileSync(file, 'right\n')
    await until(() => somnid.of('POST', '/v1/sessions/s-bad/messages').some((r) => r.headers.authorization === 'Bearer right'), 5000, 'the kept line sent with the fixed token')
    const sent = somnid.of('POST', '/v1/sessions/s-bad/messages').find((r) => r.headers.authorization === 'Bearer right')!
    assert.deepEqual(sent.body.messages.map((m: any) => m.text), ['keep me'])
    await until(() => ctx.tools.has('recall_memories'), 3000, 'tools after the token was fixed')
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('fix 5: the prompt requests name the speaking user', async () => {
  const { ctx, somnid } = await setup({ userId: 'alice', inject: { intentionsLayout: 'section' } })
  try {
    await ready(ctx, somnid)
    assert.equal(somnid.of('POST', '/v1/prompt')[0]!.body.speakerUserId, 'alice')
    await preStep(ctx, fakeAgent('s5'), 'nginx?')
    const cued = somnid.of('POST', '/v1/prompt').find((r) => r.body.currentMessage === 'nginx?')!
    assert.equal(cued.body.speakerUserId, 'alice')
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('fix 6: lines buffered while somnid was down carry the time they were said', async () => {
  const { ctx, somnid } = await setup()
  try {
    await ready(ctx, somnid)
    const port = somnid.port
    await somnid.stop()
    const s = fakeSession('s6')
    const said = Date.parse('2026-11-30T08:15:00Z')
    ctx.emit('session/event', s, { type: 'user/message', seq: 1, time: said, data: userMessage('said while down') })
    await ctx.parallel('session/flush', s)
    await new Promise((r) => setTimeout(r, 50))
    somnid.port = port
    await somnid.start()
    await until(() => somnid.of('POST', '/v1/sessions/s6/messages').length === 1, 4000, 'late capture')
    assert.equal(somnid.of('POST', '/v1/sessions/s6/messages')[0]!.body.messages[0].timestamp, '2026-11-30T08:15:00.000Z')
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('intentions as a message: on the first turn, not again while unchanged, again when changed and after a compaction; the system prompt has no intentions section', async () => {
  const { ctx, somnid } = await setup()
  let intentions = { text: 'Open intentions: deploy on Tuesday', hash: 'i1' }
  somnid.routes.set('POST /v1/prompt', (body) => ({ body: {
    identity: { text: 'I am the agent.', hash: 'h-id' }, intentions, discipline: { text: 'Recall.', hash: 'h-d' },
    cued: { text: body?.currentMessage ? '' : '', hash: '' } } }))
  try {
    await ready(ctx, somnid)
    assert.deepEqual([...ctx.sections.keys()].sort(), ['dsh-somnid:discipline', 'dsh-somnid:identity'])
    const agent = fakeAgent('s-int')
    const texts = async (t: string) => ((await preStep(ctx, agent, t)) as any).messages.slice(1).map((m: any) => m.content[0].text)
    assert.deepEqual(await texts('hi'), ['[somnid memory · open intentions · first turn]\nOpen intentions: deploy on Tuesday'])
    assert.deepEqual(await texts('more'), [])
    intentions = { text: 'Open intentions: deploy on Wednesday', hash: 'i2' }
    ctx.emit('agent/status', { agent, status: 'idle' })
    await until(() => somnid.of('POST', '/v1/prompt').filter((r) => !r.body.currentMessage).length >= 2, 2000, 'refresh')
    // Until the refreshed sections are in (a step before that sees the old hash and adds nothing).
    let changed: string[] = []
    await until(async () => (changed = await texts('and now')).length > 0, 3000, 'the changed intentions')
    assert.deepEqual(changed, ['[somnid memory · open intentions · changed]\nOpen intentions: deploy on Wednesday'])
    ctx.emit('session/event', agent.session, { type: 'compaction/end', seq: 9, time: 0, data: { compactionId: 'c' } })
    assert.deepEqual(await texts('after'), ['[somnid memory · open intentions · after compaction]\nOpen intentions: deploy on Wednesday'])
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('web: state with live dream events and last dream, folded injections with provenance, skip from the UI and /dream skip', async () => {
  const routes: any[] = []
  const { ctx, somnid } = await setup({ inject: { intentionsLayout: 'section' } }, {}, { services: {
    webServer: { register: (r: any) => { routes.push(r); return () => routes.splice(routes.indexOf(r), 1) } },
    agents: { roots: () => [{ id: 's-web' }] },
  } })
  try {
    await ready(ctx, somnid)
    await preStep(ctx, fakeAgent('s-web'), 'how do we deploy nginx?')
    await until(() => somnid.streams.size === 1, 3000, 'the plugin follows sleep events')
    const state = async () => {
      let body = ''
      const res: any = { writeHead() {}, end(b: string) { body = b } }
      await routes.find((r) => r.path === '/dsh-somnid/state').handler({ url: '/dsh-somnid/state', method: 'GET', headers: { host: '127.0.0.1:4000' } }, res)
      return JSON.parse(body)
    }
    assert.equal((await state()).dreaming, false)
    somnid.sleepEvent({ type: 'started', trigger: 'manual' })
    await until(async () => (await state()).dreaming === true, 2000, 'dreaming from the events stream')
    somnid.sleepEvent({ type: 'log', log: '2026-10-03_001', windows: 3 })
    await until(async () => (await state()).progress?.log === '2026-10-03_001', 2000, 'progress from the events stream')
    assert.deepEqual((await state()).progress, { log: '2026-10-03_001', k: 1, n: 0, windows: 3 })
    somnid.routes.set('GET /v1/sleep/status', () => ({ body: { sleeping: false, lastDream: { status: 'deep_sleep', created: 2, updated: 1, llmCalls: 3 } } }))
    somnid.sleepEvent({ type: 'finished', status: 'deep_sleep' })
    await until(async () => (await state()).status?.lastDream?.created === 2, 2000, 'last dream counts')
    const s = await state()
    assert.equal(s.dreaming, false)
    assert.equal(s.reachable, true)
    assert.deepEqual(s.injections.map((i: any) => [i.kind, i.source, i.sessionId]), [
      ['cued', 'POST /v1/prompt (cued)', 's-web'], ['hint', 'POST /v1/assoc/thought', 's-web']])
    assert.deepEqual(s.sessions, [{ id: 's-web', skipped: false }])
    let out = ''
    await routes.find((r) => r.path === '/dsh-somnid/sessions').handler({ url: '/dsh-somnid/sessions/s-web/skip', method: 'POST', headers: { host: 'localhost:4000', origin: 'http://localhost:4000' } }, { writeHead() {}, end(b: string) { out = b } })
    assert.equal(JSON.parse(out).ok, true)
    assert.equal(somnid.of('POST', '/v1/sessions/s-web/no-dream').length, 1)
    assert.deepEqual((await state()).sessions, [{ id: 's-web', skipped: true }])
    const result = await ctx.commands.get('dream').handler({ commandId: 'c', agent: fakeAgent('s-other'), rawInput: ' skip', attachments: [], signal: signal() })
    assert.equal(result.kind, 'success')
    assert.equal(somnid.of('POST', '/v1/sessions/s-other/no-dream').length, 1)
    assert.equal(somnid.of('POST', '/v1/sleep/run').length, 0, '/dream skip does not dream')
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
  assert.equal(routes.length, 0, 'routes unregistered on unload')
})

test('a long list of open intentions is capped in the message, with how many more', () => {
  const text = Array.from({ length: 25 }, (_, i) => `- [pi-${i}] task ${i}`).join('\n')
  const capped = capLines(text, 20).split('\n')
  assert.equal(capped.length, 21)
  assert.equal(capped[20], '… and 5 more lines: list_intentions shows them all.')
  assert.equal(capLines('a\nb', 20), 'a\nb')
})

test('a folded injection shows its first line of memory, not the marker line', () => {
  assert.equal(summaryOf('[memory hint]\n- deploy-window: "Tuesday to Thursday only." (see memory/knowledge/deploy-window/SKILL.md)'),
    'deploy-window: "Tuesday to Thursday only." (see memory/knowledge/deploy-window/SKILL.md)'.slice(0, 80))
  assert.equal(summaryOf('【记忆提示】\n- 部署窗口：“周二到周四”'), '部署窗口：“周二到周四”')
  assert.equal(summaryOf('\nHint: deploys are Tue-Thu.'), 'Hint: deploys are Tue-Thu.')
  assert.equal(summaryOf('[only a marker]'), '[only a marker]')
})

test('with no token the plugin sends nothing but health: what answers without one is not somnid', async () => {
  // A probe: with no token file (a somnid with another --data-dir, or not started yet), a
  // listener on the port got the conversation, set the agent's tools and wrote into its prompt.
  const dir = tempDir('somnid-no-token-')
  const savedDataHome = process.env.XDG_DATA_HOME
  process.env.XDG_DATA_HOME = join(dir, 'empty-data-home') // no default token file there
  const file = join(dir, 'token')
  const { ctx, somnid } = await setup({ tokenFile: file }, {}, { start: false })
  await somnid.start() // a listener that holds no token, answering everything
  try {
    await until(() => ctx.logs.some((l) => l.level === 'error' && /has no somnid token/.test(l.text)), 3000, 'said once')
    const agent = fakeAgent('s-none')
    const decision: any = await preStep(ctx, agent, 'my bank PIN is 4321')
    assert.match(decision.messages.at(-1).content[0].text, /has no somnid token .* memory is off until it can/)
    const s = fakeSession('s-none')
    ctx.emit('session/event', s, { type: 'user/message', seq: 1, time: Date.now(), data: userMessage('my bank PIN is 4321') })
    await ctx.parallel('session/flush', s)
    await new Promise((r) => setTimeout(r, 300)) // the monitor probes meanwhile (every 20-100 ms)
    assert.deepEqual([...new Set(somnid.requests.map((r) => `${r.method} ${r.path}`))], ['GET /v1/health'])
    assert.equal(ctx.tools.size, 0)
    // A token file with a token somnid does not hold: the reason said changes with it.
    writeFileSync(file, 'not-this-one\n')
    await until(() => ctx.logs.some((l) => l.level === 'error' && /refuses the plugin's token/.test(l.text)), 5000, 'the refusal said anew')
    somnid.token = 'now-there'
    writeFileSync(file, 'now-there\n') // somnid started: its token file is there
    await until(() => ctx.tools.has('recall_memories'), 5000, 'memory on once the token can be read')
    await until(() => somnid.of('POST', '/v1/sessions/s-none/messages').length > 0, 5000, 'the kept line delivered')
  } finally {
    await ctx.dispose()
    await somnid.stop()
    if (savedDataHome === undefined) delete process.env.XDG_DATA_HOME
    else process.env.XDG_DATA_HOME = savedDataHome
  }
})
