import Schema from '@deepseek-ai/schemastery'

/** Plugin configuration. Every key is optional; defaults are filled by the schema before `apply`. */
export interface Config {
  /** somnid's address. Loopback only: the plugin refuses to talk to anything else. */
  baseUrl: string
  /** Bearer token sent as `Authorization: Bearer <token>`; empty means read `tokenFile`. */
  token: string
  /** The file somnid keeps its token in; empty means somnid's default, `$XDG_DATA_HOME/somnid/token`. */
  tokenFile: string
  /** User id written into session logs; empty means the OS user. */
  userId: string
  /** Timeout of an ordinary request (capture, sections, activity). */
  requestTimeoutMs: number
  /**
   * The budget of somnid's hot-path hint requests in agent/pre-step and tools/post-execute:
   * the most a step waits on somnid. A hint later than this is skipped; somnid known to be
   * down costs nothing (the request fails at once).
   */
  hookTimeoutMs: number
  /** Timeout of one memory tool call. */
  toolTimeoutMs: number
  /** How long `/dream` waits for a dream to finish. */
  dreamTimeoutMs: number
  /** Background reconnection back-off while somnid is down: first and largest delay. */
  retryMinMs: number
  retryMaxMs: number
  /** While somnid is up: how often its health is checked. */
  healthIntervalMs: number
  /** How long loading the plugin waits for somnid's first answer (sections, tools) before the first turn. */
  startupWaitMs: number
  capture: {
    enabled: boolean
    /** Longer texts are clipped before they are sent (somnid clips again on its side). */
    maxMessageChars: number
    /** Send a session's queue early once it holds this many entries. */
    maxBuffered: number
    /** Keep queued lines in a durable spool file, so lines of a run that ends while somnid is down reach it on the next run. */
    spool: boolean
    /** The spool's folder; empty means `$DSH_HOME/dsh-somnid/spool` (`~/.dsh/dsh-somnid/spool`). */
    spoolDir: string
  }
  inject: {
    identity: boolean
    intentions: boolean
    discipline: boolean
    /** Cue-matched intentions (somnid's `cued` section) as a pre-step message. */
    cued: boolean
    /**
     * Where the open intentions go: `message` (default) shows them as a marked message on a
     * session's first turn, after a compaction and when they change, so the system prompt never
     * changes with them; `section` keeps them in the system prompt at `intentionsOrder`.
     */
    intentionsLayout: 'message' | 'section'
    identityOrder: number
    intentionsOrder: number
    disciplineOrder: number
  }
  assoc: {
    enabled: boolean
    preStep: boolean
    postExecute: boolean
  }
  tools: {
    enabled: boolean
  }
  reflect: {
    /** Ask the agent, once per streak, whether anything is worth remembering. */
    enabled: boolean
    /** After this many consecutive tool steps in one turn (a memory tool call resets the count). */
    afterToolSteps: number
  }
  web: {
    /** The dream status page and API on the harness web server (`/dsh-somnid`, web profile only). */
    enabled: boolean
  }
  dream: {
    enabled: boolean
    /** Register the `/dream` command. */
    command: boolean
    /** Lend the harness's LLM to somnid's dreams over `WS /v1/llm/bridge`. */
    bridge: boolean
    /** Report agent activity so a running agent interrupts a dream. */
    reportActivity: boolean
    /** `provider/model` that answers every bridged dream request (a cheaper delegate); empty: your current model. */
    model: string
    /** Tokens one dream may use through the bridge; 0: only somnid's own budget (dream.token_budget, 200k). */
    maxTokensPerDream: number
    /** Tokens dreams may use through the bridge per local day; 0: no cap. */
    maxTokensPerDay: number
    /** Lend the model only to a dream you start with /dream: scheduled dreams get no model. */
    onlyOnCommand: boolean
  }
}

const LOOPBACK_URL = /^https?:\/\/(localhost|127(?:\.\d{1,3}){3}|\[::1\])(:\d{1,5})?\/?$/

/** True when `url` names a loopback host (127.0.0.0/8, localhost, [::1]). */
export function isLoopbackUrl(url: string): boolean {
  return LOOPBACK_URL.test(url)
}

/** What a user may write: every key optional, nested groups too. */
export type ConfigInput = { [K in keyof Config]?: Config[K] extends object ? Partial<Config[K]> : Config[K] }

export const Config: Schema<ConfigInput, Config> = Schema.object({
  baseUrl: Schema.string().pattern(LOOPBACK_URL).default('http://127.0.0.1:7373')
    .description('somnid base URL (loopback only).'),
  token: Schema.string().role('secret').default('').description('Bearer token for somnid; empty = read tokenFile.'),
  tokenFile: Schema.string().default('').description('File holding the token; empty = $XDG_DATA_HOME/somnid/token.'),
  userId: Schema.string().default('').description('User id for session logs; empty = OS user.'),
  requestTimeoutMs: Schema.natural().min(1).default(5000),
  hookTimeoutMs: Schema.natural().min(1).default(200),
  toolTimeoutMs: Schema.natural().min(1).default(30000),
  dreamTimeoutMs: Schema.natural().min(1).default(45 * 60 * 1000),
  retryMinMs: Schema.natural().min(1).default(1000),
  retryMaxMs: Schema.natural().min(1).default(30000),
  healthIntervalMs: Schema.natural().min(1).default(30000),
  startupWaitMs: Schema.natural().default(2000),
  capture: Schema.object({
    enabled: Schema.boolean().default(true),
    maxMessageChars: Schema.natural().min(1).default(4000),
    maxBuffered: Schema.natural().min(1).default(32),
    spool: Schema.boolean().default(true),
    spoolDir: Schema.string().default(''),
  }).default({} as Config['capture']),
  inject: Schema.object({
    identity: Schema.boolean().default(true),
    intentions: Schema.boolean().default(true),
    discipline: Schema.boolean().default(true),
    cued: Schema.boolean().default(true),
    intentionsLayout: Schema.union(['message', 'section']).default('message'),
    identityOrder: Schema.number().default(100),
    intentionsOrder: Schema.number().default(130),
    disciplineOrder: Schema.number().default(1200),
  }).default({} as Config['inject']),
  assoc: Schema.object({
    enabled: Schema.boolean().default(true),
    preStep: Schema.boolean().default(true),
    postExecute: Schema.boolean().default(true),
  }).default({} as Config['assoc']),
  tools: Schema.object({
    enabled: Schema.boolean().default(true),
  }).default({} as Config['tools']),
  reflect: Schema.object({
    enabled: Schema.boolean().default(true),
    afterToolSteps: Schema.natural().min(1).default(7),
  }).default({} as Config['reflect']),
  web: Schema.object({
    enabled: Schema.boolean().default(true),
  }).default({} as Config['web']),
  dream: Schema.object({
    enabled: Schema.boolean().default(true),
    command: Schema.boolean().default(true),
    bridge: Schema.boolean().default(true),
    reportActivity: Schema.boolean().default(true),
    model: Schema.string().pattern(/^$|^[^/\s]+\/\S+$/).default(''),
    maxTokensPerDream: Schema.natural().default(0),
    maxTokensPerDay: Schema.natural().default(0),
    onlyOnCommand: Schema.boolean().default(false),
  }).default({} as Config['dream']),
})
