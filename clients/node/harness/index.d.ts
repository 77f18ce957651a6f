// Types of signage-sandbox/harness (and of the `signage` handle every runner integration gives).

/** JSON as the API answers it. */
export type Json = any;

/** A demo API key: what the two credential headers carry, and the ids the journal and the
 * readiness report name it by. */
export interface Credential {
  name: string;
  rawKey: string;
  clientId: string;
  scopes: string[];
  keyId: string;
  accountId: string;
}

/** One HTTP answer: status, headers (lower-case names), the body, decoded when JSON. */
export interface Answer<T = Json> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json: T;
  /** `status` is 2xx. */
  ok: boolean;
  /** The answer itself when 2xx; else throws a SignageError with the problem body. */
  raiseForStatus(): Answer<T>;
}

/** A non-2xx answer (RFC 9457 problem body in `answer.json` when there is one). */
export class SignageError extends Error {
  answer: Answer;
  /** The problem's `code` (`snapshot_exists`, `drain_timeout`, ...), if any. */
  code: string | undefined;
}

/** Calls the API as one credential (or none, for public routes). Inside a test every request
 * carries `Signage-Test-Name`, and a POST outside `/_sandbox/` gets a fresh `Idempotency-Key`
 * unless one is given. Never throws for an HTTP status. */
export class Client {
  constructor(baseUrl: string, credential?: Credential | null);
  readonly baseUrl: string;
  readonly credential: Credential | null;
  request<T = Json>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer<T>>;
  get<T = Json>(path: string, headers?: Record<string, string>): Promise<Answer<T>>;
  post<T = Json>(path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer<T>>;
  patch<T = Json>(path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer<T>>;
  delete<T = Json>(path: string, headers?: Record<string, string>): Promise<Answer<T>>;
}

/** Filters of `GET /_sandbox/requests`; `thisTest: false` counts the whole journal. */
export interface JournalFilters {
  operation_id?: string;
  key_id?: string;
  /** `503`, or a class such as `5xx`. */
  status?: number | string;
  idempotency_key?: string;
  via?: 'rest' | 'mcp' | string;
  tool?: string;
  faulted?: boolean;
  since?: string;
  until?: string;
  account_id?: string;
  test_name?: string;
  after?: string;
  /** Default true: inside a test, only what came after its mark. */
  thisTest?: boolean;
}

export type DrillKind =
  | 'duplicate'
  | 'out_of_order'
  | 'bad_signature'
  | 'missing_signature'
  | 'stale_timestamp'
  | 'future_timestamp'
  | 'rotation';

/** The sandbox operator's controls (`/_sandbox/*`, never rate limited). */
export class Operator {
  constructor(client: Client);
  readonly client: Client;
  /** Any operator call: the JSON answer, or a SignageError. */
  request<T = Json>(method: string, path: string, body?: unknown): Promise<T>;
  clock(): Promise<{ now: string; mode: 'frozen' | 'system' | string; started_at: string }>;
  /** Moves the clock by `seconds` or to the RFC 3339 instant `to`, running what falls due on the
   * way; `drain` also sends every webhook delivery due at each stop. */
  advance(options: { seconds: number; to?: never; drain?: boolean; drainTimeoutMs?: number } | { to: string; seconds?: never; drain?: boolean; drainTimeoutMs?: number }): Promise<{ now: string; events: Record<string, number>; [key: string]: Json }>;
  /** Sends every webhook delivery due now; resolves once each attempt is recorded. */
  drain(options?: { timeoutMs?: number }): Promise<Json>;
  deliveries(filters?: { status?: 'pending' | 'succeeded' | 'failed'; webhookId?: string; eventType?: string; limit?: number }): Promise<Json[]>;
  /** Emits one event of any catalogued type, built as the real transition builds it. */
  trigger(eventType: string, companyId: string, options?: { objectId?: string; data?: Json }): Promise<Json>;
  /** Runs a webhook drill against the webhook's receiver; answers its verdict. */
  drill(webhookId: string, kind: DrillKind): Promise<{ verdict: 'pass' | 'fail' | string; attempts: Json[]; [key: string]: Json }>;
  sink(name: string): Promise<Json[]>;
  clearSink(name: string): Promise<void>;
  /** A journal mark: `after` it, only what came later counts. */
  mark(): Promise<string>;
  /** Journal entries, newest first, all pages; this test's only unless `thisTest: false`. */
  requests(filters?: JournalFilters): Promise<Json[]>;
  /** How many journal entries match, this test's only unless `thisTest: false`. */
  countRequests(filters?: JournalFilters): Promise<number>;
  /** The go-live readiness report of one account, on this test's requests unless `thisTest: false`. */
  readiness(accountId: string, options?: { keyId?: string; thisTest?: boolean }): Promise<ReadinessReport>;
  /** The report as JUnit XML (the whole journal unless `thisTest: true`). */
  readinessJunit(accountId: string, options?: { keyId?: string; thisTest?: boolean }): Promise<string>;
  addFault(action: Json, options?: { match?: Json; times?: number; probability?: number }): Promise<Json>;
  faults(): Promise<Json[]>;
  removeFault(id: string): Promise<void>;
  clearFaults(): Promise<void>;
  snapshot(name: string): Promise<Json>;
  restore(name: string): Promise<Json>;
  snapshots(): Promise<Json[]>;
  deleteSnapshot(name: string): Promise<void>;
}

export interface ReadinessReport {
  verdict: 'ready' | 'not_ready' | 'incomplete';
  checks: Array<{ id: string; status: 'pass' | 'fail' | 'not_observed'; required: boolean; [key: string]: Json }>;
  [key: string]: Json;
}

/** One delivery as received: headers (lower-case names), raw body, verdict. */
export interface Delivery {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json: Json;
  verified: boolean;
  /** Why it did not verify, or null. */
  error: string | null;
  /** `webhook-id`: the event id, the same on every attempt (deduplicate by it). */
  id: string;
  type: string;
}

/** A receiver on 127.0.0.1 verifying each delivery's Standard Webhooks signature: 204 when it
 * verifies with a trusted secret, 400 otherwise. */
export class WebhookReceiver {
  static start(): Promise<WebhookReceiver>;
  readonly port: number;
  readonly deliveries: Delivery[];
  /** The URL to register as a webhook's `url`. */
  url(path?: string): string;
  /** Accepts deliveries signed with `secret` (`whsec_...`), besides earlier ones. */
  trust(secret: string): void;
  /** Resolves with `count` verified deliveries (of `eventType`); rejects after `timeoutMs` (10 s). */
  waitFor(count?: number, options?: { eventType?: string; timeoutMs?: number }): Promise<Delivery[]>;
  clear(): void;
  close(): Promise<void>;
}

export class WebhookVerificationError extends Error {}

/** Verifies a delivery as the Standard Webhooks specification says (HMAC-SHA256 of
 * `{id}.{timestamp}.{body}`, timestamp within `toleranceSeconds`, 300 by default); returns the
 * parsed body or throws WebhookVerificationError. `body` must be the raw bytes as received. */
export function verifyWebhook(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  body: string | Uint8Array,
  options?: { toleranceSeconds?: number; now?: number },
): Json;

export interface ServerOptions {
  /** Default: `$SIGNAGE_BIN`, else the binary this package installed. */
  binary?: string;
  /** A frozen clock's RFC 3339 instant (default `2026-03-02T09:00:00Z`), or null for the system clock. */
  clock?: string | null;
  /** Ids and secrets repeat from run to run (default 7); null draws them from the OS. */
  seed?: number | null;
  /** `SIGNAGE_*` settings for the server (it reads none of the test run's environment). */
  env?: Record<string, string>;
  /** Another demo-credentials file than the one shipped with this package. */
  credentials?: string;
  startTimeoutMs?: number;
}

/** One `signage serve --port 0 --database :memory:` process. */
export class SignageServer {
  constructor(options?: ServerOptions);
  readonly url: string;
  readonly credentials: Record<string, Credential>;
  readonly log: string[];
  start(): Promise<this>;
  stop(): Promise<void>;
  client(key?: string): Client;
  readonly operator: Operator;
}

export class SignageStartError extends Error {}

/** The demo credentials by name (the copy shipped with this package, or `file`). */
export function loadCredentials(file?: string): Record<string, Credential>;

/** The settings of a run: where its readiness report goes and how its servers start. */
export interface RunOptions {
  /** Write the run's readiness report (JUnit XML) here when the run ends. */
  readiness?: string;
  /** The account the report grades (default: Northwind, the demo keys' account). */
  readinessAccount?: string;
  clock?: string | null;
  seed?: number | null;
  binary?: string;
  env?: Record<string, string>;
}

export interface Broker {
  url: string;
  env: Record<string, string>;
  /** Writes the readiness report (if asked for) and stops every server. */
  stop(): Promise<{ readiness: string | null; workers: number }>;
  servers(): number;
}

/** The global setup's broker: one server per worker, leased on the worker's first test. */
export function startBroker(options?: RunOptions): Promise<Broker>;

/** One JUnit readiness report from several servers' (check by check: fail, else pass, else not observed). */
export function combineReadiness(reports: string[], workers?: Record<string, string | number>): string;
export function readinessCases(xml: string): Array<{ name: string; classname: string; status: 'pass' | 'fail' | 'not_observed'; xml: string }>;

/** What a test sees: its worker's server, restored before each test, the test's requests
 * scoped in the journal. */
export class Sandbox {
  /** The server's base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** Which of the run's servers this is (1, 2, ...). */
  readonly worker: number;
  readonly credentials: Record<string, Credential>;
  /** The current test's name as its requests carry it, or null outside a test. */
  readonly testName: string | null;
  /** A client authenticated as a demo key (`northwind-readwrite`, ...); none: public routes. */
  client(key?: string): Client;
  readonly operator: Operator;
  /** A verifying webhook receiver on a free port, closed when the test ends. */
  receiver(): Promise<WebhookReceiver>;
  /** How many of this test's journal entries match. */
  countRequests(filters?: JournalFilters): Promise<number>;
  /** This test's readiness report for an account (default: Northwind). */
  readiness(accountId?: string, options?: { keyId?: string; thisTest?: boolean }): Promise<ReadinessReport>;
  attach(options?: { owner?: string; brokerUrl?: string; serverOptions?: ServerOptions }): Promise<this>;
  detach(): Promise<void>;
  beginTest(name: string): Promise<void>;
  endTest(): Promise<void>;
}

export const TEST_NAME_HEADER: 'Signage-Test-Name';
export const BROKER_ENV: 'SIGNAGE_SANDBOX_BROKER';
export const CLEAN_SNAPSHOT: string;
export const DEFAULT_CLOCK: string;
export const DEFAULT_SEED: number;
