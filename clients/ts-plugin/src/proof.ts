import { createHmac, randomBytes } from 'node:crypto'

/**
 * The token goes only to a listener that proves it is somnid holding that token: anything can
 * listen on somnid's port while it is down (another user's process too) and would be handed
 * the token with the first request. `GET /v1/health` with a fresh `Somnid-Challenge` is
 * answered with `Somnid-Proof`: hex(HMAC-SHA256(token, "somnid-proof-v2\n" + challenge +
 * "\n" + address + "\n" + port)) for the address and port the request reached as somnid's
 * socket saw them (docs/operations.md; the CLI checks the same). A relay on another port or
 * address that forwards the challenge to somnid gets a proof that does not fit its own.
 */
export interface HealthAnswer {
  status: number
  proof: string | undefined
  /** The address and port this connection reached. */
  address: string
  port: number
}


export function newChallenge(): string {
  return randomBytes(24).toString('base64url')
}

/** One spelling of an address, as somnid writes it (`::ffff:127.0.0.1` is `127.0.0.1`). */
export function canonicalHost(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address)
  return mapped ? mapped[1]! : address.toLowerCase()
}

export function proofOf(token: string, challenge: string, address: string, port: number): string {
  return createHmac('sha256', token).update(`somnid-proof-v2\n${challenge}\n${canonicalHost(address)}\n${port}`).digest('hex')
}

/** Whether the answer proves that its sender holds `token`. */
export function proves(answer: HealthAnswer, token: string, challenge: string): boolean {
  return answer.proof?.trim().toLowerCase() === proofOf(token, challenge, answer.address, answer.port)
}
