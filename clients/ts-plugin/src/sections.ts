import type { SomnidClient, Log, Schemas } from './client.js'
import { describe } from './client.js'
import { escapeTemplate } from './messages.js'

export type SectionKey = 'identity' | 'intentions' | 'discipline'

export interface SectionSpec {
  key: SectionKey
  name: string
  order: number
}

/**
 * The three system-prompt sections, served from a cache. Section text functions are synchronous
 * and run at every assembly, so they only read the cache; `refresh()` asks somnid (without a
 * current message, so the answer never depends on the turn) and replaces a section's text only
 * when somnid's hash for it changed. While somnid is down the last text stays.
 */
export class SectionCache {
  private readonly texts: Record<SectionKey, string> = { identity: '', intentions: '', discipline: '' }
  private readonly hashes: Partial<Record<SectionKey, string>> = {}
  private inflight: Promise<boolean> | undefined
  private again = false
  /** How many times a section's text actually changed (for tests and diagnostics). */
  changes = 0

  constructor(
    private readonly client: SomnidClient,
    private readonly log: Log,
    /** The speaking user: somnid puts their profile into the identity section. Fixed per plugin, so the text stays stable. */
    private readonly speakerUserId: string,
  ) {}

  text(key: SectionKey): string {
    return this.texts[key]
  }

  /** somnid's hash of a section's current text, or undefined before the first answer. */
  hash(key: SectionKey): string | undefined {
    return this.hashes[key]
  }

  /** Refresh from somnid. Concurrent calls share one request (plus one follow-up if asked meanwhile). Never throws. */
  refresh(): Promise<boolean> {
    if (this.inflight) {
      this.again = true
      return this.inflight
    }
    this.inflight = this.load().finally(() => {
      this.inflight = undefined
      if (this.again) {
        this.again = false
        void this.refresh()
      }
    })
    return this.inflight
  }

  private async load(): Promise<boolean> {
    let answer: Schemas['PromptResponse']
    try {
      answer = await this.client.request<Schemas['PromptResponse']>('POST', '/v1/prompt', { speakerUserId: this.speakerUserId })
    } catch (error) {
      this.log.debug('prompt sections not refreshed: %s', describe(error))
      return false
    }
    let changed = false
    for (const key of ['identity', 'intentions', 'discipline'] as const) {
      const section = answer[key]
      if (!section || section.hash === this.hashes[key]) continue
      this.hashes[key] = section.hash
      this.texts[key] = escapeTemplate(section.text)
      this.changes++
      changed = true
    }
    return changed
  }
}
