import type { UserMessage } from '@deepseek-ai/dsh-llm'
import type { SomnidClient, Log, Schemas } from './client.js'
import { describe } from './client.js'
import type { Injections } from './inject.js'
import { blocksText } from './messages.js'

export interface AssocOptions {
  hookTimeoutMs: number
  /** Ask somnid for associative hints. */
  hints: boolean
  /** Ask somnid for cue-matched intentions (its `cued` section). */
  cued: boolean
  /** Names of somnid's memory tools: running one of them triggers no hint. */
  memoryTools: ReadonlySet<string>
  /** What was injected where, and when the open intentions are due again. */
  injections: Injections
  /** The open intentions to show as a message (the `message` layout), or undefined (section layout / off). */
  intentions?: () => { text: string; hash: string } | undefined
  /** The speaking user's id, sent with the cue so somnid matches that user's intentions. */
  userId: string
}

interface AgentLike {
  readonly id: string
  readonly session: { readonly header: { readonly origin?: string } }
}

type PreStepDecision = { kind: 'reject' } | { kind: 'enter'; messages: UserMessage[] }

/**
 * Associative hints on the hot path. Both hooks call `next()` first, decorate only an
 * enter/accept decision, share the turn's abort signal with a short timeout, and fall back to
 * the undecorated decision on any failure: a throw in pre-step would end the user's turn.
 */
export class Association {
  constructor(
    private readonly client: SomnidClient,
    private readonly log: Log,
    private readonly options: AssocOptions,
  ) {}

  /** The per-turn material for a user message: cue-matched intentions and a hint. */
  async material(sessionId: string, cue: string, iterNo: number, signal: AbortSignal): Promise<{ cued: string; hint: string }> {
    const timeoutMs = this.options.hookTimeoutMs
    const quiet = (what: string) => (error: unknown) => {
      this.log.debug('%s skipped: %s', what, describe(error))
      return ''
    }
    const cued = this.options.cued
      ? this.client
          .request<Schemas['PromptResponse']>('POST', '/v1/prompt', { currentMessage: cue, speakerUserId: this.options.userId }, { signal, timeoutMs, budget: true })
          .then((answer) => answer.cued.text.trim(), quiet('cued intentions'))
      : Promise.resolve('')
    const hint = this.options.hints
      ? this.client
          .request<Schemas['AssocResponse']>('POST', '/v1/assoc/thought', { sessionId, cue, iterNo }, { signal, timeoutMs, budget: true })
          .then((answer) => answer.hint.trim(), quiet('hint'))
      : Promise.resolve('')
    const [c, h] = await Promise.all([cued, hint])
    return { cued: c, hint: h }
  }

  /**
   * `agent/pre-step`: when the batch holds a real user message, append marked plugin messages:
   * a notice once if somnid refuses the token, the open intentions on the first turn, after a
   * compaction or when they changed (message layout), the cue-matched intentions and the hint.
   */
  async preStep(
    payload: { agent: AgentLike; step: number; signal: AbortSignal },
    next: () => Promise<PreStepDecision>,
  ): Promise<PreStepDecision> {
    const decision = await next()
    try {
      if (decision.kind !== 'enter' || payload.signal.aborted) return decision
      if (payload.agent.session.header.origin === 'subagent') return decision
      const users = decision.messages.filter((m) => m.source.kind === 'user')
      const cue = blocksText(users[users.length - 1]?.content)
      if (!cue) return decision
      const sessionId = payload.agent.id
      const injections = this.options.injections
      const refused = this.client.refused
      if (refused !== undefined) {
        const notice = injections.notice(sessionId, refused)
        return notice ? { ...decision, messages: [...decision.messages, notice] } : decision
      }
      if (!this.client.up) return decision
      const added: UserMessage[] = []
      const intentions = this.options.intentions?.()
      if (intentions) {
        const reason = injections.intentionsDue(sessionId, intentions.hash)
        if (reason && intentions.text.trim()) {
          added.push(injections.message(sessionId, 'intentions', capLines(intentions.text, MAX_INTENTION_LINES), 'POST /v1/prompt (intentions)', reason))
        }
        injections.intentionsShown(sessionId, intentions.hash)
      }
      if (this.options.hints || this.options.cued) {
        const { cued, hint } = await this.material(sessionId, cue, payload.step, payload.signal)
        if (payload.signal.aborted) return decision
        if (cued) added.push(injections.message(sessionId, 'cued', cued, 'POST /v1/prompt (cued)', 'user message'))
        if (hint) added.push(injections.message(sessionId, 'hint', hint, 'POST /v1/assoc/thought', 'user message'))
      }
      return added.length ? { ...decision, messages: [...decision.messages, ...added] } : decision
    } catch (error) {
      this.log.debug('pre-step hint skipped: %s', describe(error))
      return decision
    }
  }

  /** `tools/post-execute`: attach a hint about the tool that just ran as an additional context. */
  async postExecute<D extends { kind: string; additionalContexts?: UserMessage[] }>(
    exec: { name: string; arguments: unknown; agent?: AgentLike; signal: AbortSignal },
    result: { isError: boolean },
    next: () => Promise<D>,
  ): Promise<D> {
    const decision = await next()
    try {
      if (decision.kind !== 'accept' || result.isError || !exec.agent || !this.client.up) return decision
      if (exec.signal.aborted || this.options.memoryTools.has(exec.name)) return decision
      if (exec.agent.session.header.origin === 'subagent') return decision
      const args = toArgs(exec.arguments)
      const answer = await this.client.request<Schemas['AssocResponse']>(
        'POST',
        '/v1/assoc/action',
        { sessionId: exec.agent.id, toolName: exec.name, args },
        { signal: exec.signal, timeoutMs: this.options.hookTimeoutMs, budget: true },
      )
      const hint = answer.hint.trim()
      if (!hint || exec.signal.aborted) return decision
      const message = this.options.injections.message(exec.agent.id, 'action-hint', hint, 'POST /v1/assoc/action', exec.name)
      return { ...decision, additionalContexts: [...(decision.additionalContexts ?? []), message] }
    } catch (error) {
      this.log.debug('post-execute hint skipped: %s', describe(error))
      return decision
    }
  }

  /** Forget what a finished session was shown. */
  async reset(sessionId: string): Promise<void> {
    try {
      await this.client.request<Schemas['ResetResponse']>('DELETE', `/v1/assoc/sessions/${encodeURIComponent(sessionId)}`)
    } catch (error) {
      this.log.debug('assoc reset of %s failed: %s', sessionId, describe(error))
    }
  }
}

/** The most lines of open intentions one message carries: a long list is not re-sent whole at every change. */
export const MAX_INTENTION_LINES = 20

/** The first `max` lines, and how many more there are (the agent can list them all). */
export function capLines(text: string, max: number): string {
  const lines = text.trim().split('\n')
  if (lines.length <= max) return text
  return [...lines.slice(0, max), `… and ${lines.length - max} more lines: list_intentions shows them all.`].join('\n')
}

function toArgs(value: unknown): Record<string, unknown> {
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value)
    } catch {
      return { input: value }
    }
  }
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
}
