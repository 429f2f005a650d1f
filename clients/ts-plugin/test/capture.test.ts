// What the capture does when somnid refuses what it is sent: only a line somnid refuses is
// dropped, never the good lines sent beside it, and never a line for an answer that is not
// somnid's. A probe lost whole batches: 300 lines to one 413 after an outage, and the lines
// around an emoji cut in half at the clip (422).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { format } from 'node:util'
import { Capture } from '../src/capture.js'
import { SomnidClient } from '../src/client.js'
import { clip, wellFormed } from '../src/messages.js'
import { Spool } from '../src/spool.js'
import { FakeSomnid } from './fake-somnid.js'
import { fakeSession, userMessage } from './fake-ctx.js'
import { setup, ready, tempDir, until } from './helpers.js'

const problem = (status: number, code: string) => ({ status, body: { type: `urn:somnid:problem:${code}`, title: code, status, detail: code, code } })

function texts(requests: Array<{ body: any }>): string[] {
  return requests.flatMap((r) => r.body.messages.map((m: any) => m.text as string))
}

test('clip never cuts a character in two, and lone surrogates become U+FFFD', () => {
  const cut = clip('x'.repeat(3999) + '🚀 and more', 4000)
  assert.equal(wellFormed(cut), cut, 'no half of the rocket')
  assert.ok(cut.startsWith('x'.repeat(3999) + '…(truncated'), cut.slice(3990, 4020))
  assert.equal(clip('ok 🚀', 10), 'ok 🚀')
  assert.equal(wellFormed('a\uD83Db\uDE80c'), 'a\uFFFDb\uFFFDc')
  assert.equal(wellFormed('🚀'), '🚀')
})

test('a line somnid refuses is dropped alone: the lines of its batch are delivered', async () => {
  const { ctx, somnid } = await setup()
  try {
    await ready(ctx, somnid)
    somnid.routes.set('POST /v1/sessions/*/messages', (body) =>
      body.messages.some((m: any) => m.text.includes('BAD'))
        ? problem(422, 'validation_error')
        : { body: { written: body.messages.length } })
    const s = fakeSession('sess-422')
    for (const [seq, text] of [[1, 'good one'], [2, 'a BAD line'], [3, 'good three']] as const) {
      ctx.emit('session/event', s, { type: 'user/message', seq, time: 0, data: userMessage(text) })
    }
    await ctx.parallel('session/flush', s)
    const accepted = () => texts(somnid.of('POST', '/v1/sessions/sess-422/messages').filter((r) => !r.body.messages.some((m: any) => m.text.includes('BAD'))))
    await until(() => accepted().includes('good three'), 4000, 'the good lines')
    assert.deepEqual(accepted(), ['good one', 'good three'])
    assert.equal(ctx.logs.filter((l) => l.level === 'warn' && /refused a captured line/.test(l.text)).length, 1, ctx.logText('warn'))
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('a batch too large for somnid (413) is sent in smaller ones, every line delivered', async () => {
  const { ctx, somnid } = await setup()
  try {
    await ready(ctx, somnid)
    somnid.routes.set('POST /v1/sessions/*/messages', (body) =>
      body.messages.length > 3 ? problem(413, 'body_too_large') : { body: { written: body.messages.length } })
    const s = fakeSession('sess-413')
    for (let seq = 1; seq <= 10; seq++) ctx.emit('session/event', s, { type: 'user/message', seq, time: 0, data: userMessage(`line ${seq}`) })
    await ctx.parallel('session/flush', s)
    const wanted = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`)
    const delivered = () => texts(somnid.of('POST', '/v1/sessions/sess-413/messages').filter((r) => r.body.messages.length <= 3))
    await until(() => delivered().length === 10, 4000, 'every line')
    assert.deepEqual(delivered(), wanted, 'in order, each once')
    assert.ok(!ctx.logs.some((l) => /refused/.test(l.text)), ctx.logText('warn'))
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('lines are kept when what answers is not somnid (HTML with a 200, then a 404), and go out once somnid answers', async () => {
  const { ctx, somnid } = await setup()
  try {
    await ready(ctx, somnid)
    const html = '<html>another program</html>'
    let seen = 0 // a 200, then a 404 page: neither is somnid's answer
    somnid.routes.set('POST /v1/sessions/*/messages', () => ({ body: null, raw: html, status: seen++ === 0 ? 200 : 404 }))
    const s = fakeSession('sess-html')
    ctx.emit('session/event', s, { type: 'user/message', seq: 1, time: 0, data: userMessage('keep me') })
    await ctx.parallel('session/flush', s)
    await until(async () => {
      ctx.emit('session/event', s, { type: 'turn/end', seq: 2, time: 0, data: {} })
      return somnid.of('POST', '/v1/sessions/sess-html/messages').length >= 2
    }, 8000, 'two tries: a 200 and a 404, both HTML')
    somnid.routes.set('POST /v1/sessions/*/messages', (body) => ({ body: { written: body.messages.length } }))
    await until(async () => {
      ctx.emit('session/event', s, { type: 'turn/end', seq: 2, time: 0, data: {} })
      return somnid.of('POST', '/v1/sessions/sess-html/messages').length >= 3
    }, 8000, 'a third try')
    assert.ok(!ctx.logs.some((l) => /refused/.test(l.text)), ctx.logText('warn'))
    assert.deepEqual(texts(somnid.of('POST', '/v1/sessions/sess-html/messages').slice(-1)), ['keep me'])
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})

test('beyond maxPending lines waiting in a session the oldest go, said once and counted', async () => {
  const somnid = await new FakeSomnid().start()
  const url = somnid.url
  await somnid.stop() // nothing listens: every line waits
  const warnings: string[] = []
  const log = { info() {}, debug() {}, error() {}, warn: (text: unknown, ...args: unknown[]) => warnings.push(format(String(text), ...args)) }
  const client = new SomnidClient({ baseUrl: url, timeoutMs: 2000, retryMinMs: 60_000, retryMaxMs: 60_000, healthIntervalMs: 60_000, log })
  const capture = new Capture(client, log, { maxMessageChars: 4000, maxBuffered: 1_000_000, userId: 'u', maxPending: 3 })
  try {
    const s = fakeSession('sess-many')
    for (let seq = 1; seq <= 10; seq++) capture.onEvent(s, { type: 'user/message', seq, time: 0, data: userMessage(`line ${seq}`) })
    assert.equal(capture.pending('sess-many'), 3)
    assert.equal(capture.dropped, 7)
    assert.equal(warnings.filter((w) => /dropping the oldest/.test(w)).length, 1, warnings.join('\n'))
  } finally {
    capture.close()
    await client.close()
  }
})

test('a spool file a process was adopting when it ended is adopted by the next run', async () => {
  const dir = join(tempDir('dsh-somnid-orphan-'), 'spool')
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  // Process 999999998 took 999999999's file and ended before it had copied it: only there now.
  const line = { op: 'add', e: { sessionId: 's-orphan', id: 'e:1', kind: 'message', body: { role: 'user', text: 'only in the claimed file', userId: 'u', chatType: 'dsh', timestamp: new Date(0).toISOString(), id: 'e:1' } } }
  writeFileSync(join(dir, '999999999-gone.jsonl.adopting-999999998'), JSON.stringify(line) + '\n', { mode: 0o600 })
  const log = { info() {}, debug() {}, error() {}, warn() {} }
  const spool = new Spool(dir, log)
  try {
    assert.deepEqual(spool.open().map((e) => e.id), ['e:1'])
    assert.ok(!readdirSync(dir).some((f) => f.includes('adopting')), readdirSync(dir).join(' '))
  } finally {
    spool.close()
  }
})

test('lines captured while somnid was away go out at shutdown once it is back, not left for the next run', async () => {
  // No probe of the monitor's, nor one a send may start, for a minute: only the shutdown asks again.
  const { ctx, somnid } = await setup({ retryMinMs: 60_000, retryMaxMs: 60_000, healthIntervalMs: 60_000 })
  try {
    await ready(ctx, somnid)
    await somnid.stop()
    const s = fakeSession('sess-back')
    ctx.emit('session/event', s, { type: 'user/message', seq: 1, time: 0, data: userMessage('said while somnid was stopped') })
    await ctx.parallel('session/flush', s)
    await until(() => /unreachable/.test(ctx.logText('warn')), 5000, 'somnid seen down')
    await somnid.start() // back (SIGCONT), and the run ends right after
    await ctx.dispose()
    assert.deepEqual(texts(somnid.of('POST', '/v1/sessions/sess-back/messages')), ['said while somnid was stopped'])
    assert.doesNotMatch(ctx.logText('warn'), /not delivered/)
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})
