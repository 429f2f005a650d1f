import type { ModelSelection } from './bridge.js'

export interface CostOptions {
  /** `provider/model` for every bridged dream request, or '' for the user's current model. */
  model: string
  /** Tokens one dream may use through the bridge (0: only somnid's own budget). */
  maxTokensPerDream: number
  /** Tokens dreams may use through the bridge per local day (0: no cap). */
  maxTokensPerDay: number
  /** Lend the model only to a dream the user asked for with `/dream`. */
  onlyOnCommand: boolean
}

/** What dreams cost and may cost, for the status page. */
export interface CostState {
  /** The model dreams use: the delegate, or `current model (<provider/model>)`. */
  model: string
  onlyOnCommand: boolean
  maxTokensPerDream: number
  maxTokensPerDay: number
  /** Tokens through the bridge in the running (or last) dream, and today. */
  dreamTokens: number
  todayTokens: number
  /** Why the last bridged request was refused, if it was. */
  refused?: string
}

function today(): string {
  const now = new Date()
  return `${now.getFullYear()}-${now.getMonth() + 1}-${now.getDate()}`
}

/**
 * The plugin's side of a dream's cost: which model answers somnid's bridged requests (the
 * user's current one, or a cheaper delegate), and the caps: tokens per dream, per day, and
 * "only when I say /dream". A refused request makes the dream fail at that call (somnid
 * records why); nothing is spent.
 */
export class DreamCost {
  private dreamTokens = 0
  private day = today()
  private dayTokens = 0
  private commands = 0
  private refusal: string | undefined

  constructor(private readonly options: CostOptions) {}

  /** The model for a bridged request: the delegate, else the user's current selection. */
  selection(current: () => ModelSelection): ModelSelection {
    const slash = this.options.model.indexOf('/')
    if (slash > 0) return { provider: this.options.model.slice(0, slash), model: this.options.model.slice(slash + 1) }
    return current()
  }

  /** A dream started (somnid's `started` event): its own count begins. */
  dreamStarted(): void {
    this.dreamTokens = 0
    this.refusal = undefined
  }

  /** Run `fn` as a dream the user asked for (`/dream`). */
  async asCommand<T>(fn: () => Promise<T>): Promise<T> {
    this.commands++
    try {
      return await fn()
    } finally {
      this.commands--
    }
  }

  /** Why the next bridged request may not run, or undefined. */
  refuse(): string | undefined {
    this.rollDay()
    let why: string | undefined
    if (this.options.onlyOnCommand && this.commands === 0) why = 'dsh-somnid lends its model only to /dream (dream.onlyOnCommand)'
    else if (this.options.maxTokensPerDream > 0 && this.dreamTokens >= this.options.maxTokensPerDream) {
      why = `this dream used its ${this.options.maxTokensPerDream} tokens (dream.maxTokensPerDream)`
    } else if (this.options.maxTokensPerDay > 0 && this.dayTokens >= this.options.maxTokensPerDay) {
      why = `dreams used today's ${this.options.maxTokensPerDay} tokens (dream.maxTokensPerDay)`
    }
    if (why) this.refusal = why
    return why
  }

  /** A bridged request answered with this usage. */
  spent(tokens: number): void {
    this.rollDay()
    this.dreamTokens += tokens
    this.dayTokens += tokens
  }

  state(current: () => ModelSelection | undefined): CostState {
    this.rollDay()
    let model = this.options.model
    if (!model.includes('/')) {
      const s = current()
      model = s ? `your current model (${s.provider}/${s.model})` : 'your current model'
    }
    const state: CostState = {
      model,
      onlyOnCommand: this.options.onlyOnCommand,
      maxTokensPerDream: this.options.maxTokensPerDream,
      maxTokensPerDay: this.options.maxTokensPerDay,
      dreamTokens: this.dreamTokens,
      todayTokens: this.dayTokens,
    }
    if (this.refusal) state.refused = this.refusal
    return state
  }

  private rollDay(): void {
    const now = today()
    if (now !== this.day) {
      this.day = now
      this.dayTokens = 0
    }
  }
}
