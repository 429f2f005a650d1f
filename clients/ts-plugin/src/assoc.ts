import type { UserMessage } from '@deepseek-ai/dsh-llm'
import type { SomnidClient, Log, Schemas } from './client.js'
import { describe } from './client.js'
import { blocksText, hintMessage } from './messages.js'

export interface AssocOptions {
  hookTimeoutMs: number
  /** Ask somnid for associative hints. */
  hints: boolean
  /** Ask somnid for cue-matched intentions (its `cued` section). */
  cued: boolean
  /** Names of somnid's memory tools: running one of them triggers no hint. */
  memoryTools: ReadonlySet<string>
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

  /** The per-turn material for a user message: cue-matched intentions and a hint, joined. */
  async material(sessionId: string, cue: string, iterNo: number, signal: AbortSignal): Promise<string> {
    const timeoutMs = this.options.hookTimeoutMs
    const quiet = (what: string) => (error: unknown) => {
      this.log.debug('%s skipped: %s', what, describe(error))
      return ''
    }
    const cued = this.options.cued
      ? this.client
          .request<Schemas['PromptResponse']>('POST', '/v1/prompt', { currentMessage: cue }, { signal, timeoutMs })
          .then((answer) => answer.cued.text.trim(), quiet('cued intentions'))
      : Promise.resolve('')
    const hint = this.options.hints
      ? this.client
          .request<Schemas['AssocResponse']>('POST', '/v1/assoc/thought', { sessionId, cue, iterNo }, { signal, timeoutMs })
          .then((answer) => answer.hint.trim(), quiet('hint'))
      : Promise.resolve('')
    return (await Promise.all([cued, hint])).filter(Boolean).join('\n\n')
  }

  /** `agent/pre-step`: append one hint message when the batch holds a real user message. */
  async preStep(
    payload: { agent: AgentLike; step: number; signal: AbortSignal },
    next: () => Promise<PreStepDecision>,
  ): Promise<PreStepDecision> {
    const decision = await next()
    try {
      if (decision.kind !== 'enter' || payload.signal.aborted || !this.client.up) return decision
      if (payload.agent.session.header.origin === 'subagent') return decision
      const users = decision.messages.filter((m) => m.source.kind === 'user')
      const cue = blocksText(users[users.length - 1]?.content)
      if (!cue) return decision
      const text = await this.material(payload.agent.id, cue, payload.step, payload.signal)
      if (!text || payload.signal.aborted) return decision
      return { ...decision, messages: [...decision.messages, hintMessage(text)] }
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
        { signal: exec.signal, timeoutMs: this.options.hookTimeoutMs },
      )
      const hint = answer.hint.trim()
      if (!hint || exec.signal.aborted) return decision
      return { ...decision, additionalContexts: [...(decision.additionalContexts ?? []), hintMessage(hint)] }
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
