/**
 * Why memory is off though somnid may answer: a token it refuses, or none to send. Said
 * once for each kind, and anew when the kind changes (the token file written, with a token
 * somnid does not hold); cleared once a request with the token is accepted.
 */
export type RefusalKind = 'token' | 'none'

export class Refusal {
  reason: string | undefined
  kind: RefusalKind | undefined
  private readonly listeners = new Set<(reason: string) => void>()

  /** Call `fn` each time memory goes off (or its reason changes). Returns an unsubscribe. */
  on(fn: (reason: string) => void): () => void {
    this.listeners.add(fn)
    return () => this.listeners.delete(fn)
  }

  /** Set it; false when it was set for this kind already (nothing said again). */
  set(kind: RefusalKind, reason: string): boolean {
    if (this.reason !== undefined && this.kind === kind) return false
    this.reason = reason
    this.kind = kind
    for (const fn of [...this.listeners]) {
      try {
        fn(reason)
      } catch { /* a listener's failure is not ours */ }
    }
    return true
  }

  /** Clear it; false when there was none. */
  clear(): boolean {
    if (this.reason === undefined) return false
    this.reason = undefined
    this.kind = undefined
    return true
  }
}

/** What the plugin says when somnid refuses its token. */
export function refusedText(baseUrl: string, detail: string, tokenFile: string): string {
  return `somnid at ${baseUrl} refuses the plugin's token (${detail.replace(/\s+/g, ' ').trim()}); `
    + `memory is off until the token is fixed: set token or tokenFile in the dsh-somnid config, `
    + `or use somnid's token file (${tokenFile})`
}

/** What the plugin says when it has no token to send. */
export function noTokenText(tokenFile: string): string {
  return `the plugin has no somnid token (${tokenFile} cannot be read); `
    + `memory is off until it can: start somnid once (it writes the file), or set token or tokenFile `
    + `in the dsh-somnid config (\`somnid token\` prints it; a somnid with another --data-dir keeps it there)`
}
