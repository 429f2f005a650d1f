import type { UserMessage } from '@deepseek-ai/dsh-llm'
import { hintMessage, markedText, noticeMessage, type InjectionKind } from './messages.js'

/** One message the plugin put into a session, with where it came from (shown folded in the web UI). */
export interface Injection {
  readonly sessionId: string
  readonly kind: InjectionKind
  /** The somnid request the text came from, e.g. `POST /v1/assoc/thought`. */
  readonly source: string
  /** Why it was injected now: `user message`, `first turn`, `after compaction`, `changed`, a tool name. */
  readonly reason: string
  readonly text: string
  /** What the folded injection shows: its first line of memory, not somnid's marker line. */
  readonly summary: string
  readonly at: string
  readonly messageId: string
}

interface SessionState {
  /** The intentions hash last shown in this session. */
  intentionsHash: string | undefined
  /** A compaction ended since the intentions were last shown. */
  compacted: boolean
}

const KEEP = 200

/**
 * What the plugin injected, per session (the last 200), and the per-session state that decides
 * when the open intentions are shown again: on the first turn, after a compaction, and when they
 * change. Showing them as an appended message keeps the system prompt byte-stable, so an
 * intention change rewrites nothing of the cached prefix.
 */
export class Injections {
  private readonly log: Injection[] = []
  private readonly sessions = new Map<string, SessionState>()
  private noticeShown = false

  /** Build a marked recall message and record it. */
  message(sessionId: string, kind: InjectionKind, text: string, source: string, reason: string): UserMessage {
    const message = hintMessage(markedText(kind, text, kind === 'intentions' ? reason : ''))
    this.record(sessionId, kind, source, reason, text, message.id)
    return message
  }

  /** The refusal notice, once per plugin lifetime (the user must see it once, not every turn). */
  notice(sessionId: string, reason: string): UserMessage | undefined {
    if (this.noticeShown) return undefined
    this.noticeShown = true
    const text = markedText('notice', `${reason}\nThe model should not rely on long-term memory in this session.`)
    const message = noticeMessage('somnid refuses the token: memory is off (see the dsh-somnid notice)', text)
    this.record(sessionId, 'notice', 'somnid answer 401/403', 'token refused', reason, message.id)
    return message
  }

  /** Allow the notice again (after the token was accepted and refused anew). */
  rearmNotice(): void {
    this.noticeShown = false
  }

  /** Why the intentions should be shown in this session now, or undefined when they are current. */
  intentionsDue(sessionId: string, hash: string): string | undefined {
    const state = this.sessions.get(sessionId)
    if (!state) return 'first turn'
    if (state.compacted) return 'after compaction'
    if (state.intentionsHash !== hash) return 'changed'
    return undefined
  }

  /** The intentions with this hash were shown (or were empty) in the session. */
  intentionsShown(sessionId: string, hash: string): void {
    this.sessions.set(sessionId, { intentionsHash: hash, compacted: false })
  }

  compacted(sessionId: string): void {
    const state = this.sessions.get(sessionId)
    if (state) state.compacted = true
  }

  forget(sessionId: string): void {
    this.sessions.delete(sessionId)
  }

  /** The recorded injections, newest last; of one session when given. */
  list(sessionId?: string): Injection[] {
    return this.log.filter((i) => sessionId === undefined || i.sessionId === sessionId)
  }

  private record(sessionId: string, kind: InjectionKind, source: string, reason: string, text: string, messageId: string): void {
    this.log.push({ sessionId, kind, source, reason, text, summary: summaryOf(text), at: new Date().toISOString(), messageId })
    if (this.log.length > KEEP) this.log.splice(0, this.log.length - KEEP)
  }
}

const MARKER = /^\s*(\[[^\]\n]*\]|【[^】\n]*】)\s*$/

/** The first line of an injected text that says something: not a marker line such as somnid's
 * `[memory hint]` or `【记忆提示】`, nor a blank one; a list item without its dash; 80 characters. */
export function summaryOf(text: string): string {
  const lines = text.split('\n').map((line) => line.trim())
  const first = lines.find((line) => line && !MARKER.test(line)) ?? lines.find((line) => line) ?? ''
  return first.replace(/^[-*]\s+/, '').slice(0, 80)
}
