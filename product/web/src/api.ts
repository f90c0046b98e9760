// The /api/v1 contract, mirroring api.go field for field (api_test.go in
// package web checks the names), and the client the views use.

export interface Page<T> {
  items: T[];
  next_cursor?: string;
  event_id: string;
}

export interface Error {
  error: ErrorDetail;
}

export interface ErrorDetail {
  kind: string;
  message: string;
  conflict?: Conflict;
}

export interface Conflict {
  reason: string;
  expected: ApprovalDigests;
  actual: ApprovalDigests;
  paths: string[];
}

export interface Status {
  version: string;
  schema: number;
  started_at: string;
  event_id: string;
  commands_served: number;
}

export interface Subject {
  kind: string;
  name: string;
}

export interface ResolutionSummary {
  resolution_id: number;
  at: string;
  need_id: string;
  route: string;
  subject: Subject;
  kind: string;
  hit: boolean;
  worker_spawned: boolean;
  tokens_spent: number;
  tokens_saved: number;
  latency_ms: number;
  certificate_id?: string;
  artifact_ids: string[];
}

export interface EvidenceDetail {
  artifact: Artifact;
  certificate?: Certificate;
  dependencies: Dependency[];
  freshness: Freshness;
  event_id: string;
}

export interface Artifact {
  artifact_id: string;
  kind: string;
  subject: Subject;
  status: string;
  locations: Location[];
  steps: FlowStep[];
  tests: TestRef[];
  reasons: string[];
}

export interface Location {
  path: string;
  start_line: number;
  end_line: number;
  symbol?: string;
}

export interface FlowStep {
  ordinal: number;
  location: Location;
  description: WorkerText;
}

// WorkerText is free text a worker wrote, never checked: always shown
// labelled as the worker's, unverified (WorkerWords in views.tsx).
export interface WorkerText {
  text: string;
  unverified: boolean;
  source: string;
}

export interface TestRef {
  package: string;
  name: string;
  path: string;
  command: string;
}

export interface Certificate {
  certificate_id: string;
  validator_version: string;
  obligations: string[];
  created_at: string;
}

export interface Dependency {
  kind: string;
  path: string;
  digest: string;
  state: string;
}

export interface Freshness {
  state: string;
  checked_at: string;
  changed: number;
}

export interface Accounting {
  resolutions: number;
  hits: number;
  hit_rate: number;
  worker_runs: number;
  tokens_spent: number;
  tokens_saved: number;
  tokens_baseline: number;
  by_kind: Record<string, number>;
  series: AccountingPoint[];
  event_id: string;
}

export interface AccountingPoint {
  at: string;
  resolutions: number;
  hits: number;
  tokens_spent: number;
  tokens_saved: number;
}

export interface LifecycleSummary {
  lifecycle_id: string;
  change_id: string;
  task: string;
  phase: string;
  status: string;
  reason?: string;
  round: number;
  updated_at: string;
  events: number;
  state_digest: string;
  corrupt?: string;
}

export interface LifecycleDetail {
  summary: LifecycleSummary;
  phases: PhaseState[];
  criteria: string[];
  acceptance: AcceptanceCriterion[];
  tests: TestOutcome[];
  patch?: Patch;
  diff?: Diff;
  review?: Review;
  verification?: Verification;
  approval: ApprovalState;
  apply?: ApplyState;
  event_id: string;
}

export interface PhaseState {
  phase: string;
  status: string;
}

export interface TestOutcome {
  test: string;
  command: string;
  outcome: string;
  duration_ms: number;
}

export interface Patch {
  patch_id: string;
  revision: number;
  files: PatchFile[];
}

export interface PatchFile {
  path: string;
  op: string;
  bytes: number;
}

export interface Verification {
  verification_id: string;
  verdict: string;
  criteria: Criterion[];
}

export interface Criterion {
  digest: string;
  status: string;
  reason: WorkerText;
}

export interface AcceptanceCriterion {
  ordinal: number;
  digest: string;
  text: string;
  status: string;
  reason: WorkerText;
}

export interface Diff {
  lines: DiffLine[];
  truncated: boolean;
  error?: string;
}

export interface DiffLine {
  kind: string;
  text: string;
  path?: string;
}

export interface Review {
  review_id: string;
  findings: Finding[];
}

export interface Finding {
  severity: string;
  criterion: number;
  summary: WorkerText;
}

export interface ApprovalState {
  awaiting: boolean;
  digests: ApprovalDigests;
  approval?: Approval;
}

export interface ApprovalDigests {
  patch: string;
  verification: string;
  lifecycle: string;
}

export interface ApprovalRequest {
  digests: ApprovalDigests;
}

export interface Approval {
  approval_id: string;
  change_id: string;
  digests: ApprovalDigests;
  approved_at: string;
}

export interface ApplyRequest {
  approval_id: string;
}

export interface CancelRequest {
  note: string;
}

export interface ApplyResult {
  change_id: string;
  patch_id: string;
  files: number;
  applied_at: string;
  notes?: string[];
}

export interface ApplyState {
  status: string;
  cause?: string;
  paths: string[];
}

export interface LifecycleEvent {
  seq: number;
  at: string;
  kind: string;
  phase: string;
  status: string;
  summary: string;
  detail?: WorkerText;
  payload_digest: string;
  state_digest: string;
}

export interface LifecycleChange {
  summary: LifecycleSummary;
  event: LifecycleEvent;
}

// ApiError is a refused or failed request, with the server's body.
export class ApiError extends globalThis.Error {
  constructor(public status: number, public detail: ErrorDetail) {
    super(detail.message);
  }
}

async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const init: RequestInit = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { ...init.headers, "Content-Type": "application/json" };
  }
  const resp = await fetch(path, init);
  const text = await resp.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!resp.ok) {
    const detail = (parsed as Error | undefined)?.error ?? { kind: "http_" + resp.status, message: resp.statusText || "request failed" };
    throw new ApiError(resp.status, detail);
  }
  return parsed as T;
}

const enc = encodeURIComponent;

export const api = {
  status: () => request<Status>("GET", "/api/v1/status"),
  needs: (cursor = "", limit = 25) => request<Page<ResolutionSummary>>("GET", `/api/v1/needs?limit=${limit}&cursor=${enc(cursor)}`),
  evidence: (id: string) => request<EvidenceDetail>("GET", `/api/v1/evidence/${enc(id)}`),
  accounting: () => request<Accounting>("GET", "/api/v1/accounting"),
  lifecycles: (cursor = "", limit = 25) => request<Page<LifecycleSummary>>("GET", `/api/v1/lifecycles?limit=${limit}&cursor=${enc(cursor)}`),
  lifecycle: (id: string) => request<LifecycleDetail>("GET", `/api/v1/lifecycles/${enc(id)}`),
  lifecycleEvents: (id: string, after = 0, limit = 100) =>
    request<Page<LifecycleEvent>>("GET", `/api/v1/lifecycles/${enc(id)}/events?after=${after}&limit=${limit}`),
  approve: (id: string, req: ApprovalRequest) => request<Approval>("POST", `/api/v1/lifecycles/${enc(id)}/approvals`, req),
  apply: (id: string, req: ApplyRequest) => request<ApplyResult>("POST", `/api/v1/lifecycles/${enc(id)}/apply`, req),
  cancel: (id: string, req: CancelRequest) => request<LifecycleDetail>("POST", `/api/v1/lifecycles/${enc(id)}/cancel`, req),
  logout: () => request<void>("POST", "/api/v1/logout", {}),
};

// Stream event types (api.go).
export type StreamHandlers = {
  resolution?: (r: ResolutionSummary) => void;
  lifecycle?: (c: LifecycleChange) => void;
  accounting?: (a: Accounting) => void;
  reset?: () => void;
  state?: (s: "live" | "reconnecting" | "closed") => void;
};

// openStream subscribes to /api/v1/events resuming after lastEventId (the
// event_id of the snapshot the caller holds). EventSource reconnects by
// itself with Last-Event-ID; a "reset" means resume was impossible and the
// caller must reload its state. A stream the browser gave up on (its
// server answered an error, such as 401 after a restart) is "closed": the
// caller must find out why (probe /api/v1/status) and open a new one.
export function openStream(lastEventId: string, h: StreamHandlers): () => void {
  const es = new EventSource(`/api/v1/events?last_event_id=${enc(lastEventId)}`);
  const on = <T,>(type: string, f?: (v: T) => void) => {
    if (f) es.addEventListener(type, (e) => f(JSON.parse((e as MessageEvent).data) as T));
  };
  on("resolution", h.resolution);
  on("lifecycle", h.lifecycle);
  on("accounting", h.accounting);
  es.addEventListener("reset", () => h.reset?.());
  es.onopen = () => h.state?.("live");
  es.onerror = () => h.state?.(es.readyState === EventSource.CLOSED ? "closed" : "reconnecting");
  return () => es.close();
}
