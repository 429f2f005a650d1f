import type { UserMessage } from '@deepseek-ai/dsh-llm'
import type { Injections } from './inject.js'

export interface ReflectOptions {
  /** Consecutive tool steps in one turn before the agent is asked once. */
  afterToolSteps: number
  /** Names of somnid's memory tools: a step that ends with one counts as consolidated. */
  memoryTools: ReadonlySet<string>
  injections: Injections
}

interface TurnState {
  turn: number
  /** The last step whose last tool call was a memory tool (0: none yet). */
  consolidated: number
  /** The streak already asked about (the step it was asked at, 0: none). */
  asked: number
  /** Whether the latest tool call of the running step was a memory tool. */
  lastWasMemory: boolean
  /** The step the latest pre-step ran for. */
  step: number
}

export const REFLECTION_TEXT =
  'Several tool steps since memory was last consolidated. Is anything from them worth remembering '
  + '(a fact, a decision, a pitfall, a preference of the user)? If so, say it in one short line starting '
  + 'with "Remember:" (the next dream keeps it) or record a task with add_intention; if not, carry on.'

/**
 * Reflection: after `afterToolSteps` consecutive tool steps in one turn, one short marked
 * message asks the agent whether anything is worth remembering. A step whose last tool call
 * was a memory tool resets the streak (consolidated); a cancelled turn never reaches the next
 * step, so it never triggers; the next ask needs a new full streak.
 */
export class Reflection {
  private readonly turns = new Map<string, TurnState>()

  constructor(private readonly options: ReflectOptions) {}

  /** `session/event`: follow tool calls (which was the last?) and forget a session's turn at its end. */
  onEvent(sessionId: string, event: { type: string; data: unknown }): void {
    const state = this.turns.get(sessionId)
    if (event.type === 'tool/call' && state) {
      const name = (event.data as { name?: string } | undefined)?.name ?? ''
      state.lastWasMemory = this.options.memoryTools.has(name)
    } else if (event.type === 'turn/end') {
      this.turns.delete(sessionId)
    }
  }

  /** `agent/pre-step` for `step` of `turn`: the reflection message when one is due, else undefined. */
  due(sessionId: string, turn: number, step: number, aborted: boolean): UserMessage | undefined {
    let state = this.turns.get(sessionId)
    if (!state || state.turn !== turn) {
      state = { turn, consolidated: 0, asked: 0, lastWasMemory: false, step }
      this.turns.set(sessionId, state)
    }
    // Every step after the first follows a step that called tools; was its last one a memory tool?
    if (step > state.step && state.lastWasMemory) state.consolidated = step - 1
    state.lastWasMemory = false
    state.step = step
    if (aborted) return undefined
    const streak = step - 1 - Math.max(state.consolidated, state.asked)
    if (streak < this.options.afterToolSteps) return undefined
    state.asked = step - 1
    return this.options.injections.message(sessionId, 'reflection', REFLECTION_TEXT, 'plugin (reflection)', `${streak} tool steps`)
  }

  forget(sessionId: string): void {
    this.turns.delete(sessionId)
  }
}
