import type { ContentBlock, MessageId, UserMessage } from '@deepseek-ai/dsh-llm'

/** The plugin's name: the `source.plugin` of every message it injects. */
export const PLUGIN_NAME = 'dsh-somnid'

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key])
  }
  return value
}

/**
 * A memory hint as the harness's `createUserMessage` would build it (fresh id, role user, deep-frozen),
 * inlined so the plugin ships no runtime copy of the harness. Source: this plugin, form `recall`,
 * never `{kind: 'user'}`, so nothing mistakes it for the human's words.
 */
export function hintMessage(text: string): UserMessage {
  return deepFreeze({
    id: crypto.randomUUID() as MessageId,
    role: 'user' as const,
    content: [{ type: 'text' as const, text }],
    source: { kind: 'plugin' as const, plugin: PLUGIN_NAME, form: 'recall' as const },
  })
}

/** What an injected memory message is; its first line names it, so model and reader see where it came from. */
export type InjectionKind = 'hint' | 'cued' | 'intentions' | 'action-hint' | 'notice' | 'reflection'

const LABELS: Record<InjectionKind, string> = {
  hint: 'associative hint',
  cued: 'cue-matched intentions',
  intentions: 'open intentions',
  'action-hint': 'hint after a tool call',
  notice: 'notice',
  reflection: 'reflection',
}

/** `[somnid memory · <label>] <text>`: a compact, clearly marked injected message text. */
export function markedText(kind: InjectionKind, text: string, note = ''): string {
  return `[somnid memory · ${LABELS[kind]}${note ? ` · ${note}` : ''}]\n${text.trim()}`
}

/** A plugin notice (`form: 'notice'`, summary at most 120 characters), for what the user must see. */
export function noticeMessage(summary: string, text: string): UserMessage {
  return deepFreeze({
    id: crypto.randomUUID() as MessageId,
    role: 'user' as const,
    content: [{ type: 'text' as const, text }],
    source: { kind: 'plugin' as const, plugin: PLUGIN_NAME, form: 'notice' as const, summary: summary.slice(0, 120) },
  }) as UserMessage
}

/** True for a message this plugin injected. */
export function isOwnMessage(message: { source?: { kind: string; plugin?: string } }): boolean {
  return message.source?.kind === 'plugin' && message.source.plugin === PLUGIN_NAME
}

/** The text a person would read in some content blocks: text blocks joined, placeholders for attachments. */
export function blocksText(content: readonly ContentBlock[] | undefined): string {
  if (!content) return ''
  const parts: string[] = []
  for (const block of content) {
    if (block.type === 'text') parts.push(block.text)
    else if (block.type === 'image') parts.push('[image]')
    else if (block.type === 'tool-result') parts.push(blocksText(block.content))
  }
  return parts.join('\n').trim()
}

/** `{{` and `}}` would be read as template variables by the system prompt: break them up. */
export function escapeTemplate(text: string): string {
  return text.replace(/\{\{/g, '{ {').replace(/\}\}/g, '} }')
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/** The text with each half of a split character (a lone surrogate, which somnid refuses) as U+FFFD. */
export function wellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, '\uFFFD')
}

/** At most `max` UTF-16 units of the text and a note of its length; never half a character (an emoji cut in two). */
export function clip(text: string, max: number): string {
  if (text.length <= max) return wellFormed(text)
  const end = max > 0 && /[\uD800-\uDBFF]/.test(text[max - 1]!) ? max - 1 : max
  return `${wellFormed(text.slice(0, end))}…(truncated, ${text.length} chars)`
}
