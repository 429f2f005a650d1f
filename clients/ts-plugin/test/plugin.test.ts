import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import plugin, { Config, inject, name } from '../src/index.js'
import { fakeAgent, fakeSession, userMessage } from './fake-ctx.js'
import { setup, ready, sectionText, tempDir, until } from './helpers.js'
import { SomnidClient } from '../src/client.js'
import { FakeSomnid } from './fake-somnid.js'

const pkgDir = new URL('../../', import.meta.url)

test('module shape: name, inject, Config with every key optional, apply, bundle patch', () => {
  assert.equal(name, 'dsh-somnid')
  assert.deepEqual(inject, ['tools', 'systemPrompt'])
  assert.equal(typeof plugin.apply, 'function')
  const config = Config({})
  assert.equal(config.baseUrl, 'http://127.0.0.1:7373')
  assert.equal(config.inject.intentionsOrder, 130)
  assert.equal(config.capture.enabled, true)
  assert.equal(typeof (Config as unknown as Record<string, { validate: unknown }>)['~standard']!.validate, 'function')
  assert.throws(() => Config({ baseUrl: 'http://example.com:7373' }), /regexp/)
  const pkg = JSON.parse(readFileSync(new URL('package.json', pkgDir), 'utf8'))
  assert.equal(pkg.type, 'module')
  assert.equal(pkg.dsh.bundle.patch, './cordis.patch.yml')
  assert.ok(!Object.keys(pkg.dependencies ?? {}).some((d: string) => d.startsWith('@deepseek-ai/')), 'harness packages are not runtime dependencies')
  const patch = readFileSync(new URL('cordis.patch.yml', pkgDir), 'utf8')
  assert.match(patch, /- insert:/)
  assert.match(patch, new RegExp(`name: '?${pkg.name}'?`))
})

test('sections: three sections at 100/130/1200 from a cache, escaped, replaced only on a new hash', async () => {
  const { ctx, somnid } = await setup({ inject: { intentionsLayout: 'section' } })
  try {
    await ready(ctx, somnid)
    const orders = Object.fromEntries([...ctx.sections.values()].map((s) => [s.name, s.order]))
    assert.deepEqual(orders, { 'dsh-somnid:identity': 100, 'dsh-somnid:intentions': 130, 'dsh-somnid:discipline': 1200 })
    assert.equal(sectionText(ctx, 'intentions'), 'Open intentions: none { {x} }')
    const prompts = somnid.of('POST', '/v1/prompt')
    assert.equal(prompts[0]!.body.currentMessage, undefined, 'the sections request never carries the current message')
    // Same hash, different text: the cache keeps the old bytes (somnid says nothing changed).
    somnid.routes.set('POST /v1/prompt', () => ({ body: {
      identity: { text: 'CHANGED', hash: 'h-id-1' }, intentions: { text: 'New intention', hash: 'h-int-2' },
      discipline: { text: 'Recall before guessing.', hash: 'h-dis-1' }, cued: { text: '', hash: '' } } }))
    const agent = fakeAgent('s1')
    ctx.emit('agent/status', { agent, status: 'idle' })
    await until(() => sectionText(ctx, 'intentions') === 'New intention', 2000, 'refresh')
    assert.equal(sectionText(ctx, 'identity'), 'I am the agent.')
    // somnid down: the last text stays.
    await somnid.stop()
    ctx.emit('agent/status', { agent, status: 'idle' })
    await new Promise((r) => setTimeout(r, 100))
    assert.equal(sectionText(ctx, 'intentions'), 'New intention')
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('capture: batched lines flushed on turn/end and session/flush; subagents and own hints skipped; disposal closes; compaction reported', async () => {
  const { ctx, somnid } = await setup()
  try {
    await ready(ctx, somnid)
    const s = fakeSession('sess-1')
    ctx.emit('session/event', s, { type: 'user/message', seq: 1, time: 0, data: userMessage('please check nginx') })
    ctx.emit('session/event', s, { type: 'user/message', seq: 2, time: 0, data: userMessage('a hint', { kind: 'plugin', plugin: 'dsh-somnid', form: 'recall' }) })
    ctx.emit('session/event', s, { type: 'assistant/chunk', seq: 3, time: 0, data: {} })
    ctx.emit('session/event', s, { type: 'tool/call', seq: 4, time: 1_700_000_000_000, data: { callId: 'c1', name: 'exec_shell', arguments: '{"command":\n "curl x"}' } })
    ctx.emit('session/event', s, { type: 'tool/result', seq: 5, time: 1_700_000_009_000, data: { message: { content: [{ type: 'tool-result', toolCallId: 'c1', content: [{ type: 'text', text: '502 Bad Gateway' }], isError: false }] } } })
    ctx.emit('session/event', s, { type: 'assistant/message', seq: 6, time: 0, data: { turn: 1, step: 1, message: { content: [{ type: 'reasoning', text: 'hm' }, { type: 'text', text: 'nginx returns 502' }] } } })
    assert.equal(somnid.of('POST', /messages$/).length, 0, 'nothing is sent before a flush point')
    ctx.emit('session/event', fakeSession('sub-1', 'subagent'), { type: 'user/message', seq: 1, time: 0, data: userMessage('subagent words') })
    ctx.emit('session/event', s, { type: 'turn/end', seq: 7, time: 0, data: { turn: 1, reason: { kind: 'completed' } } })
    await ctx.parallel('session/flush', s)
    await until(() => somnid.of('POST', /messages$/).length === 2, 2000, 'both batches sent in the background')
    const batches = somnid.of('POST', /messages$/)
    assert.equal(batches[0]!.path, '/v1/sessions/sess-1/messages')
    assert.equal(batches[0]!.body.messages[0].id, 'e:1', 'each line carries its id')
    assert.deepEqual(batches[0]!.body.messages.map((m: any) => [m.role, m.text]), [['user', 'please check nginx']])
    const tools = somnid.of('POST', /tool-calls$/)
    assert.equal(tools.length, 1)
    assert.deepEqual(tools[0]!.body, { call: 'exec_shell({"command": "curl x"})', result: '502 Bad Gateway', timestamp: new Date(1_700_000_000_000).toISOString(), id: 'e:5' }, 'the call time, not the result time')
    assert.deepEqual(batches[1]!.body.messages.map((m: any) => [m.role, m.text]), [['agent', 'nginx returns 502']])
    assert.ok(!somnid.requests.some((r) => r.path.includes('sub-1')), 'subagent sessions are skipped')
    assert.ok(!JSON.stringify(somnid.requests).includes('a hint'), 'own hints are never captured')
    ctx.emit('session/event', s, { type: 'compaction/end', seq: 8, time: 0, data: { compactionId: 'x' } })
    await until(() => somnid.of('POST', '/v1/sessions/sess-1/compacted').length === 1, 2000, 'compacted')
    ctx.emit('session/disposed', s)
    await until(() => somnid.of('POST', '/v1/sessions/sess-1/close').length === 1, 2000, 'close')
    await until(() => somnid.of('DELETE', '/v1/assoc/sessions/sess-1').length === 1, 2000, 'assoc reset')
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('capture while somnid is down keeps the lines and sends them when it is back', async () => {
  const { ctx, somnid } = await setup()
  try {
    await ready(ctx, somnid)
    const port = somnid.port
    await somnid.stop()
    const s = fakeSession('sess-down')
    ctx.emit('session/event', s, { type: 'user/message', seq: 1, time: 0, data: userMessage('said while down') })
    await ctx.parallel('session/flush', s) // resolves although somnid is down
    await until(() => ctx.logs.some((l) => l.level === 'warn' && /unreachable/.test(l.text)), 2000, 'the send failed')
    assert.equal(somnid.of('POST', '/v1/sessions/sess-down/messages').length, 0)
    somnid.port = port
    await somnid.start()
    await until(() => somnid.of('POST', '/v1/sessions/sess-down/messages').length === 1, 4000, 'late capture')
    assert.equal(ctx.logs.filter((l) => l.level === 'warn' && /unreachable/.test(l.text)).length, 1, 'logged once: ' + ctx.logText('warn'))
    assert.match(ctx.logText('info'), /somnid is back/)
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('pre-step: next() first; a hint only for a batch with a real user message; cued intentions included', async () => {
  const { ctx, somnid } = await setup({ inject: { intentionsLayout: 'section' } })
  try {
    await ready(ctx, somnid)
    const order: string[] = []
    ctx.on('agent/pre-step', async (_p: unknown, next: () => Promise<unknown>) => { order.push('other-before'); const d = await next(); order.push('other-after'); return d })
    const agent = fakeAgent('s-pre')
    const signal = new AbortController().signal
    const user = userMessage('how do we deploy nginx?')
    const d1: any = await ctx.waterfall('agent/pre-step', [{ agent, messages: [user], turn: 1, step: 1, signal }],
      async () => { order.push('inner'); return { kind: 'enter', messages: [user] } })
    assert.deepEqual(order, ['other-before', 'inner', 'other-after'])
    assert.equal(d1.messages.length, 3, 'cue-matched intentions and the hint, one marked message each')
    const [cued, hint] = [d1.messages[1], d1.messages[2]]
    for (const m of [cued, hint]) {
      assert.deepEqual(m.source, { kind: 'plugin', plugin: 'dsh-somnid', form: 'recall' })
      assert.equal(m.role, 'user')
      assert.ok(Object.isFrozen(m) && typeof m.id === 'string')
    }
    assert.equal(cued.content[0].text, '[somnid memory · cue-matched intentions]\nCued: fix the nginx 502')
    assert.equal(hint.content[0].text, '[somnid memory · associative hint]\nHint: deploys are Tue-Thu.')
    assert.deepEqual(somnid.of('POST', '/v1/assoc/thought')[0]!.body, { sessionId: 's-pre', cue: 'how do we deploy nginx?', iterNo: 1 })
    // Continuation step: no user message, no request, decision unchanged.
    const before = somnid.requests.length
    const d2: any = await ctx.waterfall('agent/pre-step', [{ agent, messages: [], turn: 1, step: 2, signal }], async () => ({ kind: 'enter', messages: [] }))
    assert.deepEqual(d2, { kind: 'enter', messages: [] })
    // A batch with only a plugin notice: no hint either.
    const notice = userMessage('policy changed', { kind: 'plugin', plugin: 'approval' })
    const d3: any = await ctx.waterfall('agent/pre-step', [{ agent, messages: [notice], turn: 2, step: 1, signal }], async () => ({ kind: 'enter', messages: [notice] }))
    assert.equal(d3.messages.length, 1)
    assert.equal(somnid.requests.length, before)
    // Reject stays reject.
    const d4 = await ctx.waterfall('agent/pre-step', [{ agent, messages: [user], turn: 3, step: 1, signal }], async () => ({ kind: 'reject' }))
    assert.deepEqual(d4, { kind: 'reject' })
    // Subagent: untouched.
    const sub = fakeAgent('sub', 'subagent')
    const d5: any = await ctx.waterfall('agent/pre-step', [{ agent: sub, messages: [user], turn: 1, step: 1, signal }], async () => ({ kind: 'enter', messages: [user] }))
    assert.equal(d5.messages.length, 1)
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('pre-step failures, slowness and abort all return the undecorated decision', async () => {
  const { ctx, somnid } = await setup({ hookTimeoutMs: 150, inject: { intentionsLayout: 'section' } })
  try {
    await ready(ctx, somnid)
    const agent = fakeAgent('s-fail')
    const user = userMessage('deploy nginx now')
    const run = (signal: AbortSignal) => ctx.waterfall<any>('agent/pre-step', [{ agent, messages: [user], turn: 1, step: 1, signal }], async () => ({ kind: 'enter', messages: [user] }))
    somnid.routes.set('POST /v1/assoc/thought', () => ({ status: 500, body: { title: 'boom', status: 500, code: 'x', detail: 'boom', type: 'x' } }))
    somnid.routes.set('POST /v1/prompt', () => ({ status: 500, body: { title: 'boom', status: 500, code: 'x', detail: 'boom', type: 'x' } }))
    assert.equal((await run(new AbortController().signal)).messages.length, 1)
    // A somnid that never answers: the step ends all the same, by the hook's time-out.
    somnid.routes.set('POST /v1/assoc/thought', () => new Promise<never>(() => {}))
    assert.equal((await run(new AbortController().signal)).messages.length, 1)
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
  // With a time-out of a minute, only the abort can end the wait (no bound on speed).
  const slow = await setup({ hookTimeoutMs: 60_000, inject: { intentionsLayout: 'section' } })
  try {
    await ready(slow.ctx, slow.somnid)
    slow.somnid.routes.set('POST /v1/assoc/thought', () => new Promise<never>(() => {}))
    const agent = fakeAgent('s-abort')
    const user = userMessage('deploy nginx now')
    const aborted = new AbortController()
    const started = Date.now()
    const pending = slow.ctx.waterfall<any>('agent/pre-step', [{ agent, messages: [user], turn: 1, step: 1, signal: aborted.signal }], async () => ({ kind: 'enter', messages: [user] }))
    setTimeout(() => aborted.abort(), 20)
    assert.equal((await pending).messages.length, 1)
    assert.ok(Date.now() - started < 30_000, 'abort ends the wait before the time-out')
  } finally {
    await slow.ctx.dispose()
    await slow.somnid.stop()
  }
})

test('post-execute: accept decisions get an additional context; errors, rejects and memory tools do not', async () => {
  const { ctx, somnid } = await setup()
  try {
    await ready(ctx, somnid)
    const agent = fakeAgent('s-post')
    const signal = new AbortController().signal
    const exec = { callId: 'c1', rootCallId: 'c1', name: 'read_file', arguments: { path: '/etc/nginx.conf' }, agent, signal }
    const d: any = await ctx.waterfall('tools/post-execute', [exec, { isError: false, value: 'x', content: [] }], async () => ({ kind: 'accept' }))
    assert.equal(d.kind, 'accept')
    assert.equal(d.additionalContexts.length, 1)
    assert.equal(d.additionalContexts[0].source.kind, 'plugin')
    assert.deepEqual(somnid.of('POST', '/v1/assoc/action')[0]!.body, { sessionId: 's-post', toolName: 'read_file', args: { path: '/etc/nginx.conf' } })
    const n = somnid.requests.length
    const e: any = await ctx.waterfall('tools/post-execute', [exec, { isError: true, error: { message: 'x' }, content: [] }], async () => ({ kind: 'accept' }))
    assert.equal(e.additionalContexts, undefined)
    const b: any = await ctx.waterfall('tools/post-execute', [exec, { isError: false, value: 'x', content: [] }], async () => ({ kind: 'block', feedback: [] }))
    assert.deepEqual(b, { kind: 'block', feedback: [] })
    const m: any = await ctx.waterfall('tools/post-execute', [{ ...exec, name: 'recall_memories' }, { isError: false, value: 'x', content: [] }], async () => ({ kind: 'accept' }))
    assert.equal(m.additionalContexts, undefined)
    assert.equal(somnid.requests.length, n)
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('tools: registered with output schema and render, concurrency flags, session id, error string when down', async () => {
  const { ctx, somnid } = await setup()
  try {
    await ready(ctx, somnid)
    const recall = ctx.tools.get('recall_memories')
    const add = ctx.tools.get('add_intention')
    assert.deepEqual(recall.output.schema, { type: 'string' })
    assert.deepEqual(recall.output.render({}, 'hi'), [{ type: 'text', text: 'hi' }])
    assert.equal(recall.isConcurrencySafe({}), true)
    assert.equal(add.isConcurrencySafe({}), false)
    const agent = fakeAgent('s-tool')
    const value = await recall.execute({ query: 'nginx' }, { agent, signal: new AbortController().signal })
    assert.equal(value, 'recalled: nginx (session s-tool)')
    const prompts = somnid.of('POST', '/v1/prompt').length
    assert.match(await add.execute({ what: 'x' }, { agent, signal: new AbortController().signal }), /pi-/)
    await until(() => somnid.of('POST', '/v1/prompt').length > prompts, 2000, 'intentions refresh after add_intention')
    somnid.routes.set('POST /v1/tools/recall_memories', () => ({ status: 422, body: { type: 'x', title: 'bad', status: 422, code: 'invalid_arguments', detail: 'query is required' } }))
    await assert.rejects(recall.execute({}, { agent, signal: new AbortController().signal }), /recall_memories failed: .*422.*query is required/)
    await somnid.stop()
    await assert.rejects(recall.execute({ query: 'x' }, { agent, signal: new AbortController().signal }), /recall_memories failed: somnid is unreachable/)
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('somnid down at start: harness keeps working, one log line, tools and sections arrive when it comes up', async () => {
  const { ctx, somnid } = await setup({}, {}, { start: false })
  try {
    await until(() => ctx.logs.some((l) => /unreachable/.test(l.text)), 2000, 'down log')
    const agent = fakeAgent('s-x')
    const user = userMessage('deploy please')
    const d: any = await ctx.waterfall('agent/pre-step', [{ agent, messages: [user], turn: 1, step: 1, signal: new AbortController().signal }], async () => ({ kind: 'enter', messages: [user] }))
    assert.equal(d.messages.length, 1, 'hints stay silent')
    assert.equal(sectionText(ctx, 'identity'), '')
    assert.equal(ctx.tools.size, 0)
    await new Promise((r) => setTimeout(r, 200))
    assert.equal(ctx.logs.filter((l) => l.level === 'warn' && /unreachable/.test(l.text)).length, 1)
    await somnid.start()
    await ready(ctx, somnid)
    assert.ok(ctx.tools.has('recall_memories'))
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('/dream command, activity reports, and cleanup through effect only', async () => {
  const { ctx, somnid } = await setup()
  try {
    await ready(ctx, somnid)
    const dream = ctx.commands.get('dream')
    const s = fakeSession('s-dream')
    ctx.emit('session/event', s, { type: 'user/message', seq: 1, time: 0, data: userMessage('remember this') })
    const result = await dream.handler({ commandId: 'c', agent: fakeAgent('s-dream'), rawInput: '', attachments: [], signal: new AbortController().signal })
    assert.equal(result.kind, 'success')
    assert.match(result.text, /deep_sleep/)
    assert.match(result.text, /slept well/)
    const run = somnid.of('POST', '/v1/sleep/run')[0]!
    assert.deepEqual(run.body, { trigger: 'manual', wait: true })
    const captured = somnid.of('POST', '/v1/sessions/s-dream/messages')
    assert.equal(captured.length, 1, 'pending lines are flushed before the dream')
    assert.ok(somnid.requests.indexOf(captured[0]!) < somnid.requests.indexOf(run))
    ctx.emit('agent/status', { agent: fakeAgent('a1'), status: 'running' })
    await until(() => somnid.of('POST', '/v1/activity').length === 1, 2000, 'activity')
    const report = somnid.of('POST', '/v1/activity')[0]!.body
    assert.equal(report.agentId, 'a1')
    assert.equal(report.status, 'running')
    assert.ok(report.hostId.length > 0)
  } finally {
    assert.ok(!ctx.listeners.has('dispose'), 'no dispose event is used')
    await ctx.dispose()
    await somnid.stop()
  }
  assert.equal([...ctx.listeners.values()].flat().length, 0, 'listeners are removed')
  assert.equal(ctx.tools.size, 0)
  assert.equal(ctx.sections.size, 0)
  const n = somnid.requests.length
  await new Promise((r) => setTimeout(r, 150))
  assert.equal(somnid.requests.length, n, 'the monitor stopped')
})

test('token and tokenFile send a Bearer header', async () => {
  const dir = tempDir('somnid-token-')
  const savedDataHome = process.env.XDG_DATA_HOME
  process.env.XDG_DATA_HOME = join(dir, 'empty-data-home') // no default token file there
  const file = join(dir, 'token')
  writeFileSync(file, 'file-secret\n')
  for (const [over, secret] of [[{ token: 'abc' }, 'abc'], [{ tokenFile: file }, 'file-secret']] as const) {
    const { ctx, somnid } = await setup(over, {}, { start: false })
    somnid.token = secret
    await somnid.start()
    try {
      await ready(ctx, somnid)
      // A proof's own health request carries no token; every request after it does.
      const asked = somnid.requests.filter((r) => r.path !== '/v1/health' || r.headers['somnid-challenge'] === undefined)
      assert.ok(asked.length > 0 && asked.every((r) => r.headers.authorization === (secret && `Bearer ${secret}`)), JSON.stringify(asked.map((r) => [r.path, r.headers.authorization])))
      assert.ok(somnid.requests.filter((r) => r.headers['somnid-challenge'] !== undefined).every((r) => r.headers.authorization === undefined), 'a proof never carries the token')
    } finally {
      await ctx.dispose()
      await somnid.stop()
    }
  }
  if (savedDataHome === undefined) delete process.env.XDG_DATA_HOME
  else process.env.XDG_DATA_HOME = savedDataHome
})

test('with neither token nor tokenFile the default token file is read, and read again each time', async () => {
  const dataHome = tempDir('somnid-xdg-')
  const savedDataHome = process.env.XDG_DATA_HOME
  process.env.XDG_DATA_HOME = dataHome
  const somnid = new FakeSomnid()
  somnid.token = 'late-secret'
  await somnid.start()
  const refused = { type: 'urn:somnid:problem:unauthorized', title: 'Unauthorized', status: 401, detail: 'send the token', code: 'unauthorized' }
  somnid.routes.set('GET /v1/tools', (_body, req) =>
    req.headers.authorization === 'Bearer late-secret' ? { body: [] } : { status: 401, body: refused })
  const quiet = { debug() {}, info() {}, warn() {}, error() {} }
  const client = new SomnidClient({ baseUrl: somnid.url, timeoutMs: 2000, retryMinMs: 50, retryMaxMs: 100, healthIntervalMs: 60_000, log: quiet as never })
  try {
    await assert.rejects(client.request('GET', '/v1/tools'), /has no somnid token/)
    assert.deepEqual(somnid.of('GET', '/v1/tools'), [], 'not sent without a token')
    mkdirSync(join(dataHome, 'somnid'))
    writeFileSync(join(dataHome, 'somnid', 'token'), 'old-secret\n') // a token somnid then rotates
    await assert.rejects(client.request('GET', '/v1/tools'), /could not prove it is somnid holding the plugin's token/)
    writeFileSync(join(dataHome, 'somnid', 'token'), 'late-secret\n') // somnid's token now
    assert.deepEqual(await client.request('GET', '/v1/tools'), [])
  } finally {
    await client.close()
    await somnid.stop()
    if (savedDataHome === undefined) delete process.env.XDG_DATA_HOME
    else process.env.XDG_DATA_HOME = savedDataHome
  }
})

test('a tool call asks somnid again though a probe failed a moment ago: it may be back from a restart', async () => {
  const somnid = new FakeSomnid()
  somnid.token = 'the-secret'
  await somnid.start()
  const quiet = { debug() {}, info() {}, warn() {}, error() {} }
  // A long back-off: the monitor would not look again during the test.
  const client = new SomnidClient({ baseUrl: somnid.url, token: 'the-secret', timeoutMs: 2000, retryMinMs: 60_000, retryMaxMs: 60_000, healthIntervalMs: 60_000, log: quiet as never })
  try {
    await client.request('GET', '/v1/tools')
    const port = somnid.port
    await somnid.stop()
    await assert.rejects(client.request('GET', '/v1/tools'), /unreachable/) // marks it down
    await assert.rejects(client.request('GET', '/v1/tools'), /unreachable/) // its probe fails
    somnid.port = port
    await somnid.start() // back, before the monitor's next probe
    const before = somnid.requests.length
    await assert.rejects(client.request('GET', '/v1/tools'), /down; retrying in the background/)
    assert.equal(somnid.requests.length, before, 'other requests fail at once within the back-off')
    const answer = await client.request<{ result: string }>('POST', '/v1/tools/recall_memories', { args: { query: 'nginx' }, sessionId: 's' }, { asked: true })
    assert.equal(answer.result, 'recalled: nginx (session s)')
    assert.ok(client.up, 'its probe found somnid up')
  } finally {
    await client.close()
    await somnid.stop()
  }
})
