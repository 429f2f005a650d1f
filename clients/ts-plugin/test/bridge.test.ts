import { test } from 'node:test'
import assert from 'node:assert/strict'
import { answerChat, LlmBridge, type SocketLike, type BridgeHost, type ChatRequest } from '../src/bridge.js'
import { setup, ready, until } from './helpers.js'

class FakeSocket implements SocketLike {
  readyState = 0
  sent: any[] = []
  private handlers = new Map<string, Array<(e: { data?: unknown }) => void>>()
  constructor(readonly url: string, readonly headers: Record<string, string>) {}
  send(data: string) { this.sent.push(JSON.parse(data)) }
  close() { this.fire('close', {}) }
  addEventListener(type: string, fn: (e: { data?: unknown }) => void) {
    this.handlers.set(type, [...(this.handlers.get(type) ?? []), fn])
  }
  fire(type: string, e: { data?: unknown }) {
    if (type === 'open') this.readyState = 1
    if (type === 'close') this.readyState = 3
    for (const fn of this.handlers.get(type) ?? []) fn(e)
  }
}

async function* textStream(text: string) {
  yield { type: 'block-start', index: 0, blockType: 'text' }
  yield { type: 'text-delta', index: 0, text }
  yield { type: 'block-end', index: 0, block: { type: 'text', text } }
  yield { type: 'usage', usage: { inputTokens: 11, outputTokens: 7, cacheReadTokens: 3 } }
  yield { type: 'finish', reason: { kind: 'stop' } }
}

async function* toolStream() {
  yield { type: 'block-start', index: 0, blockType: 'tool-call' }
  yield { type: 'tool-call-delta', index: 0, id: 'c9', name: 'read_session_log', argumentsDelta: '{"path":' }
  yield { type: 'tool-call-delta', index: 0, id: 'c9', argumentsDelta: '"a.md"}' }
  yield { type: 'usage', usage: { inputTokens: 5, outputTokens: 2 } }
  yield { type: 'finish', reason: { kind: 'tool-calls' } }
}

const chat: ChatRequest = {
  type: 'llm.chat', id: 'r1',
  messages: [
    { role: 'system', content: 'You dream.' },
    { role: 'user', content: 'Consolidate.' },
    { role: 'assistant', content: '', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'list_items', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: 'nothing' },
  ],
  tools: [{ type: 'function', function: { name: 'list_items', description: 'List.', parameters: { type: 'object', properties: {} } } }],
}

test('answerChat: OpenAI shapes → GenerateOptions with the current selection; chunks → OpenAI answer', async () => {
  const calls: any[] = []
  const host: BridgeHost = {
    stream: (o) => { calls.push(o); return (calls.length === 1 ? textStream('dreamt') : toolStream()) as any },
    currentSelection: () => ({ provider: 'deepseek', model: 'deepseek-chat' }),
  }
  const answer = await answerChat(host, { ...chat, options: { max_tokens: 900, temperature: 0.2, response_format: { type: 'json_object' } } }, new AbortController().signal)
  assert.deepEqual(answer, { message: { role: 'assistant', content: 'dreamt' }, usage: { prompt_tokens: 11, completion_tokens: 7, cached_tokens: 3 }, finish_reason: 'stop' })
  assert.equal(calls[0].maxTokens, 900, 'options.max_tokens reaches ctx.llm.stream')
  assert.equal(calls[0].temperature, 0.2)
  assert.equal(calls[0].system, 'You dream.\n\nAnswer with exactly one JSON object and nothing else.', 'response_format becomes a prompt note')
  const o = calls[0]
  assert.equal(o.provider, 'deepseek')
  assert.equal(o.model, 'deepseek-chat')
  assert.deepEqual(o.messages.map((m: any) => [m.role, m.source.kind]), [['user', 'user'], ['assistant', 'model'], ['user', 'tool']])
  assert.deepEqual(o.messages[1].content, [{ type: 'tool-call', id: 'c1', name: 'list_items', arguments: '{}' }])
  assert.deepEqual(o.messages[2].content[0], { type: 'tool-result', toolCallId: 'c1', content: [{ type: 'text', text: 'nothing' }], isError: false })
  assert.deepEqual(o.tools, [{ name: 'list_items', description: 'List.', parameters: { type: 'object', properties: {} } }])
  assert.ok(o.signal instanceof AbortSignal)
  const tool = await answerChat(host, chat, new AbortController().signal)
  assert.equal(tool.finish_reason, 'tool_calls')
  assert.deepEqual(tool.message.tool_calls, [{ id: 'c9', type: 'function', function: { name: 'read_session_log', arguments: '{"path":"a.md"}' } }])
  const failing: BridgeHost = {
    stream: async function* () { yield { type: 'finish', reason: { kind: 'error', failure: { message: 'rate limited' } } } } as any,
    currentSelection: () => ({ provider: 'p', model: 'm' }),
  }
  await assert.rejects(answerChat(failing, chat, new AbortController().signal), /rate limited/)
})

test('LlmBridge: hello, llm.chat → llm.result, llm.cancel aborts, reconnects with back-off, close stops', async () => {
  const sockets: FakeSocket[] = []
  let streamSignal: AbortSignal | undefined
  const host: BridgeHost = {
    stream: (o) => {
      if ((o.messages[0]?.content[0] as any)?.text === 'slow') {
        streamSignal = o.signal
        return (async function* () {
          await new Promise((r) => o.signal!.addEventListener('abort', r))
          yield { type: 'finish', reason: { kind: 'aborted' } }
        })() as any
      }
      return textStream('ok') as any
    },
    currentSelection: () => ({ provider: 'p', model: 'm' }),
  }
  const bridge = new LlmBridge(host, {
    url: 'ws://127.0.0.1:1/v1/llm/bridge', headers: () => ({ authorization: 'Bearer t' }), retryMinMs: 10, retryMaxMs: 40,
    hostName: 'test-host', log: { info() {}, warn() {}, error() {}, debug() {} },
    socket: (url, headers) => { const s = new FakeSocket(url, headers); sockets.push(s); return s },
  })
  bridge.start()
  await until(() => sockets.length === 1, 2000, 'the first socket')
  const s1 = sockets[0]!
  assert.equal(s1.url, 'ws://127.0.0.1:1/v1/llm/bridge')
  assert.deepEqual(s1.headers, { authorization: 'Bearer t' })
  s1.fire('open', {})
  assert.deepEqual(s1.sent[0], { type: 'hello', host: 'test-host', model: 'p/m' })
  s1.fire('message', { data: JSON.stringify({ ...chat, id: 'q1' }) })
  await until(() => s1.sent.length === 2, 2000, 'result')
  assert.equal(s1.sent[1].type, 'llm.result')
  assert.equal(s1.sent[1].id, 'q1')
  assert.equal(s1.sent[1].message.content, 'ok')
  s1.fire('message', { data: JSON.stringify({ type: 'llm.chat', id: 'q2', messages: [{ role: 'user', content: 'slow' }], tools: [] }) })
  await until(() => streamSignal !== undefined, 2000, 'slow stream')
  s1.fire('message', { data: JSON.stringify({ type: 'llm.cancel', id: 'q2' }) })
  assert.equal(streamSignal!.aborted, true)
  await new Promise((r) => setTimeout(r, 20))
  assert.equal(s1.sent.length, 2, 'nothing is sent for a cancelled call')
  s1.fire('message', { data: 'not json' })
  s1.fire('close', {})
  await until(() => sockets.length === 2, 2000, 'reconnect')
  sockets[1]!.fire('close', {})
  await until(() => sockets.length === 3, 2000, 'second reconnect')
  bridge.close()
  await new Promise((r) => setTimeout(r, 100))
  assert.equal(sockets.length, 3, 'no reconnect after close')
})

test('the plugin mounts the bridge when llm and agentDefaultModel exist, and closes it through effect', async () => {
  const sockets: FakeSocket[] = []
  const { ctx, somnid } = await setup({}, { socket: (url, headers) => { const s = new FakeSocket(url, headers); sockets.push(s); return s } })
  try {
    await ready(ctx, somnid)
    await until(() => sockets.length > 0, 3000, 'the bridge connects once somnid answered')
    assert.equal(sockets.length, 1)
    assert.equal(sockets[0]!.url, `${somnid.url.replace('http', 'ws')}/v1/llm/bridge`)
    sockets[0]!.fire('open', {})
    ctx.streamScript.push(() => textStream('from the harness'))
    sockets[0]!.fire('message', { data: JSON.stringify(chat) })
    await until(() => sockets[0]!.sent.some((f) => f.type === 'llm.result'), 2000, 'bridged result')
    assert.equal(ctx.streamCalls[0].provider, 'fake')
    assert.equal(ctx.streamCalls[0].model, 'fake-1')
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
  assert.equal(sockets[0]!.readyState, 3, 'socket closed on unload')
  await new Promise((r) => setTimeout(r, 80))
  assert.equal(sockets.length, 1, 'no reconnect after unload')
})

test('the bridge connects as soon as somnid is reached, however long it was away', async () => {
  // While somnid was away each look grew the back-off: the bridge came back seconds after
  // somnid did, and a dream started meanwhile ran without a model.
  const sockets: FakeSocket[] = []
  let up = false
  let looks = 0
  const bridge = new LlmBridge({ stream: () => { throw new Error('unused') }, currentSelection: () => ({ provider: 'p', model: 'm' }) }, {
    url: 'ws://127.0.0.1:1/v1/llm/bridge', headers: () => ({ authorization: 'Bearer t' }), retryMinMs: 10, retryMaxMs: 600_000,
    ready: () => { looks += 1; return up }, hostName: 'h', log: { info() {}, warn() {}, error() {}, debug() {} },
    socket: (url, headers) => { const s = new FakeSocket(url, headers); sockets.push(s); return s },
  })
  try {
    bridge.start()
    await until(() => looks >= 12, 5000, 'a dozen looks while somnid is away')
    up = true
    const seen = looks
    await until(() => sockets.length === 1, 5000, 'the socket, at the next look')
    assert.ok(looks <= seen + 2, `${looks - seen} looks after somnid was back`)
  } finally {
    bridge.close()
  }
})
