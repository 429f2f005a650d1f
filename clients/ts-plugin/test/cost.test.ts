// What dreams cost: the model they use (a delegate), caps per dream and per day, "only on /dream".
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { answerChat, type BridgeHost } from '../src/bridge.js'
import { DreamCost } from '../src/cost.js'
import { setup, ready, until } from './helpers.js'

const current = () => ({ provider: 'deepseek', model: 'deepseek-v4' })

function host(cost: DreamCost, seen: string[]): BridgeHost {
  return {
    currentSelection: () => cost.selection(current),
    refuse: () => cost.refuse(),
    spent: (tokens) => cost.spent(tokens),
    async *stream(options) {
      seen.push(`${options.provider}/${options.model}`)
      yield { type: 'text-delta', index: 0, text: 'ok' } as never
      yield { type: 'usage', usage: { inputTokens: 60, outputTokens: 40 } } as never
      yield { type: 'finish', reason: { kind: 'stop' } } as never
    },
  }
}

const chat = { type: 'llm.chat' as const, id: '1', messages: [{ role: 'user' as const, content: 'hi' }] }

test('a delegate model answers every bridged request; caps per dream and per day refuse before spending', async () => {
  const cost = new DreamCost({ model: 'cheap/mini', maxTokensPerDream: 150, maxTokensPerDay: 250, onlyOnCommand: false })
  const seen: string[] = []
  const h = host(cost, seen)
  const signal = new AbortController().signal
  cost.dreamStarted()
  assert.equal((await answerChat(h, chat, signal)).message.content, 'ok')
  await answerChat(h, chat, signal) // 200 tokens now: over this dream's 150
  await assert.rejects(answerChat(h, chat, signal), /refused: this dream used its 150 tokens/)
  assert.deepEqual(seen, ['cheap/mini', 'cheap/mini'], 'the delegate, and nothing sent once refused')
  cost.dreamStarted()
  await answerChat(h, chat, signal) // 300 today: over the day's 250
  await assert.rejects(answerChat(h, chat, signal), /today's 250 tokens/)
  const state = cost.state(() => current())
  assert.equal(state.model, 'cheap/mini')
  assert.equal(state.todayTokens, 300)
  assert.match(state.refused ?? '', /maxTokensPerDay/)
  const mine = new DreamCost({ model: '', maxTokensPerDream: 0, maxTokensPerDay: 0, onlyOnCommand: false })
  assert.equal(mine.state(() => current()).model, 'your current model (deepseek/deepseek-v4)')
  assert.deepEqual(mine.selection(current), current())
})

test('only on /dream: a scheduled dream gets no model, a /dream does', async () => {
  const cost = new DreamCost({ model: '', maxTokensPerDream: 0, maxTokensPerDay: 0, onlyOnCommand: true })
  const seen: string[] = []
  const signal = new AbortController().signal
  await assert.rejects(answerChat(host(cost, seen), chat, signal), /only to \/dream/)
  const answer = await cost.asCommand(() => answerChat(host(cost, seen), chat, signal))
  assert.equal(answer.message.content, 'ok')
  assert.deepEqual(seen, ['deepseek/deepseek-v4'])
})

test('the status state says which model dreams use, the caps, and the last dream cost passes through', async () => {
  const routes: any[] = []
  const { ctx, somnid } = await setup({ dream: { model: 'cheap/mini', maxTokensPerDay: 50_000, onlyOnCommand: true } }, {}, { services: {
    webServer: { register: (r: any) => { routes.push(r); return () => routes.splice(routes.indexOf(r), 1) } },
  } })
  try {
    await ready(ctx, somnid)
    somnid.routes.set('GET /v1/sleep/status', () => ({ body: { sleeping: false, pendingLogs: 3, nextEligible: '2026-10-03T12:15:00+00:00', eligibility: 'idle', lastDream: { status: 'deep_sleep', tokens: { total: 1234 } } } }))
    const state = async () => {
      let body = ''
      await routes.find((r) => r.path === '/dsh-somnid/state').handler({ url: '/dsh-somnid/state', method: 'GET', headers: { host: '127.0.0.1:1' } }, { writeHead() {}, end(b: string) { body = b } })
      return JSON.parse(body)
    }
    await until(() => somnid.streams.size === 1, 3000, 'the plugin follows sleep events')
    somnid.sleepEvent({ type: 'finished', status: 'deep_sleep' })
    await until(async () => (await state()).status?.pendingLogs === 3, 3000, 'status read')
    const s = await state()
    assert.deepEqual(s.cost, { model: 'cheap/mini', onlyOnCommand: true, maxTokensPerDream: 0, maxTokensPerDay: 50_000, dreamTokens: 0, todayTokens: 0 })
    assert.equal(s.status.lastDream.tokens.total, 1234)
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
})
