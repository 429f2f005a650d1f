// Reflection: once after N consecutive tool steps in a turn; a memory tool resets; cancelled turns never trigger.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fakeAgent, fakeSession } from './fake-ctx.js'
import { setup, ready } from './helpers.js'

const MARK = '[somnid memory · reflection]'

/** Run one turn of `tools.length + 1` steps, the model calling `tools[i]` at step i+1; answers the reflection messages seen per step. */
async function turn(ctx: any, sessionId: string, turnNo: number, tools: string[], aborted = (_step: number) => false): Promise<number[]> {
  const agent = fakeAgent(sessionId)
  const session = fakeSession(sessionId)
  const asked: number[] = []
  for (let step = 1; step <= tools.length + 1; step++) {
    const controller = new AbortController()
    if (aborted(step)) controller.abort()
    const decision = await ctx.waterfall('agent/pre-step', [{ agent, messages: [], turn: turnNo, step, signal: controller.signal }], async () => ({ kind: 'enter', messages: [] }))
    if (decision.messages.some((m: any) => m.content[0].text.startsWith(MARK))) asked.push(step)
    const tool = tools[step - 1]
    if (tool) ctx.emit('session/event', session, { type: 'tool/call', seq: step, time: 0, data: { callId: `c${step}`, name: tool, arguments: '{}' } })
  }
  ctx.emit('session/event', session, { type: 'turn/end', seq: 99, time: 0, data: { turn: turnNo, reason: { kind: 'completed' } } })
  return asked
}

test('reflection: once after 7 tool steps, not when the 7th is a memory tool, never in a cancelled turn, configurable and off', async () => {
  const { ctx, somnid } = await setup()
  try {
    await ready(ctx, somnid)
    const noop = (n: number) => Array.from({ length: n }, () => 'exec_shell')
    assert.deepEqual(await turn(ctx, 's1', 1, noop(7)), [8], 'asked once, at the step after the 7th tool step')
    assert.deepEqual(await turn(ctx, 's1', 2, noop(9)), [8], 'once per streak, not at every step after')
    assert.deepEqual(await turn(ctx, 's1', 3, [...noop(6), 'recall_memories']), [], 'a memory tool last: consolidated')
    assert.deepEqual(await turn(ctx, 's1', 4, [...noop(3), 'add_intention', ...noop(7)]), [12], 'the streak counts from the memory tool')
    assert.deepEqual(await turn(ctx, 's1', 5, noop(6)), [], 'six are not enough')
    assert.deepEqual(await turn(ctx, 's1', 6, noop(7), (step) => step === 8), [], 'a cancelled turn never triggers')
  } finally {
    await ctx.dispose()
    await somnid.stop()
  }
  const three = await setup({ reflect: { afterToolSteps: 3 } })
  try {
    await ready(three.ctx, three.somnid)
    assert.deepEqual(await turn(three.ctx, 's2', 1, ['exec_shell', 'exec_shell', 'exec_shell']), [4])
  } finally {
    await three.ctx.dispose()
    await three.somnid.stop()
  }
  const off = await setup({ reflect: { enabled: false } })
  try {
    await ready(off.ctx, off.somnid)
    assert.deepEqual(await turn(off.ctx, 's3', 1, Array.from({ length: 8 }, () => 'exec_shell')), [])
  } finally {
    await off.ctx.dispose()
    await off.somnid.stop()
  }
})
