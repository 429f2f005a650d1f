import { appendFileSync, chmodSync, closeSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, truncateSync, unlinkSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import type { Log } from './client.js'
import { describe } from './client.js'

/** One captured line (or a session's close) waiting for somnid. `id` is unique within its session. */
export interface SpoolEntry {
  sessionId: string
  id: string
  kind: 'message' | 'tool' | 'close'
  body: unknown
}

type Record_ = { op: 'add'; e: SpoolEntry } | { op: 'done'; k: string[] }

/** The harness's state dir (`$DSH_HOME`, else `~/.dsh`) + `dsh-somnid/spool`. */
export function defaultSpoolDir(): string {
  return join(process.env.DSH_HOME || join(homedir(), '.dsh'), 'dsh-somnid', 'spool')
}

export function entryKey(entry: { sessionId: string; id: string }): string {
  return `${entry.sessionId}\u0000${entry.id}`
}

/** The spool files open in this process, across reloads of the plugin (hot reload imports it anew). */
const OPEN: Set<string> = ((globalThis as Record<symbol, unknown>)[Symbol.for('dsh-somnid.spools')] ??= new Set<string>()) as Set<string>

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * A durable local queue of captured lines: one append-only JSON-lines file per process
 * (`<pid>-<random>.jsonl`, mode 0600, in a 0700 folder). `add` writes a line before it returns;
 * `done` records deliveries, and the file is emptied once nothing is pending and removed at a
 * clean close. `open()` adopts the files of processes that are gone (a run that ended while
 * somnid was down), and those an earlier instance in this process closed (a plugin reload):
 * their pending lines become this instance's, to be delivered by it.
 */
export class Spool {
  private file: string | undefined
  private readonly pending = new Set<string>()

  constructor(
    private readonly dir: string,
    private readonly log: Log,
  ) {}

  get path(): string | undefined {
    return this.file
  }

  get size(): number {
    return this.pending.size
  }

  /** Create the folder and this process's file; answer the pending lines of dead processes' files. */
  open(): SpoolEntry[] {
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 })
      chmodSync(this.dir, 0o700)
      const name = `${process.pid}-${Math.random().toString(36).slice(2, 10)}.jsonl`
      const file = join(this.dir, name)
      closeSync(openSync(file, 'a', 0o600))
      chmodSync(file, 0o600)
      this.file = file
      OPEN.add(file)
    } catch (error) {
      this.log.warn('cannot open the capture spool in %s: %s; captured lines live in memory only', this.dir, describe(error))
      return []
    }
    const adopted: SpoolEntry[] = []
    for (const other of readdirSync(this.dir)) {
      // `<pid>-<random>.jsonl`, or one a process was adopting (`….adopting-<its pid>`) when it
      // ended: the lines it had not yet copied into its own file are still only there.
      const match = /^(\d+)-[a-z0-9]+\.jsonl(?:\.adopting-(\d+))?$/.exec(other)
      if (!match || join(this.dir, other) === this.file) continue
      const pid = Number(match[2] ?? match[1])
      // A live process's file is its own; so is one of this process that an instance still has
      // open. One this process left behind (the plugin reloaded while somnid was down) is adopted.
      if (pid === process.pid ? match[2] !== undefined || OPEN.has(join(this.dir, other)) : alive(pid)) continue
      // Claim it first: of two new processes only one wins the rename. (A line both here and in
      // the dead adopter's own file is sent twice, and written once: somnid knows its id.)
      const claimed = join(this.dir, `${other.replace(/\.adopting-\d+$/, '')}.adopting-${process.pid}`)
      try {
        renameSync(join(this.dir, other), claimed)
      } catch {
        continue
      }
      try {
        for (const entry of readPending(readFileSync(claimed, 'utf8'))) {
          adopted.push(entry)
          this.add(entry)
        }
        unlinkSync(claimed)
      } catch (error) {
        this.log.warn('cannot read the spool file %s: %s', claimed, describe(error))
      }
    }
    if (adopted.length) this.log.info('delivering %d captured lines kept from an earlier run', adopted.length)
    return adopted
  }

  /** Keep one entry durably (on disk before this returns). */
  add(entry: SpoolEntry): void {
    this.pending.add(entryKey(entry))
    this.write({ op: 'add', e: entry })
  }

  /** These entries reached somnid (or were given up): forget them. */
  done(entries: Array<{ sessionId: string; id: string }>): void {
    const keys = entries.map(entryKey).filter((k) => this.pending.delete(k))
    if (!keys.length) return
    if (this.pending.size === 0 && this.file) {
      try {
        truncateSync(this.file, 0)
        return
      } catch { /* fall through: record the deliveries instead */ }
    }
    this.write({ op: 'done', k: keys })
  }

  /** At a clean end: remove the file when nothing is pending (else the next run delivers it). */
  close(): void {
    if (!this.file) return
    OPEN.delete(this.file)
    if (this.pending.size === 0) {
      try {
        unlinkSync(this.file)
      } catch { /* already gone */ }
    }
    this.file = undefined
  }

  private write(record: Record_): void {
    if (!this.file) return
    try {
      appendFileSync(this.file, JSON.stringify(record) + '\n', { mode: 0o600 })
    } catch (error) {
      this.log.warn('cannot write the capture spool %s: %s', this.file, describe(error))
    }
  }
}

/** The entries added and not done, in order; a torn last line (a crash mid-write) is ignored. */
export function readPending(text: string): SpoolEntry[] {
  const entries = new Map<string, SpoolEntry>()
  for (const line of text.split('\n')) {
    if (!line.trim()) continue
    let record: Record_
    try {
      record = JSON.parse(line) as Record_
    } catch {
      continue
    }
    if (record.op === 'add') entries.set(entryKey(record.e), record.e)
    else if (record.op === 'done') for (const key of record.k) entries.delete(key)
  }
  return [...entries.values()]
}
