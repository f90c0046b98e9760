import { useEffect, useRef, useState } from "react";
import { ApiError, ApplyResult, Approval, Conflict, LifecycleDetail, api } from "../api";
import { fmtTime, shortId } from "../format";
import { ErrorNote } from "./common";

// Approval, reject and cancel of a lifecycle. An approval takes two
// steps: a review screen that names the files the apply writes and the
// digests the approval binds, then the confirmation. The digests are the
// ones the page was given, so a page older than the lifecycle approves
// nothing (409). The lifecycle machine has no reject verb: Reject cancels
// the lifecycle with the user's reason recorded in its journal, and says
// so.

// useAction runs a button's request, one at a time: busy while it runs,
// and its error kept to show.
function useAction() {
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<unknown>();
  const run = async (f: () => Promise<void>) => {
    setBusy(true);
    setErr(undefined);
    try {
      await f();
    } catch (e) {
      setErr(e);
    } finally {
      setBusy(false);
    }
  };
  return { busy, err, run };
}

export function Digests({ title, d }: { title: string; d: { patch: string; verification: string; lifecycle: string } }) {
  return (
    <dl className="digests" aria-label={title}>
      <dt>Patch</dt>
      <dd className="mono" data-digest="patch">
        {d.patch}
      </dd>
      <dt>Verification</dt>
      <dd className="mono" data-digest="verification">
        {d.verification}
      </dd>
      <dt>Lifecycle</dt>
      <dd className="mono" data-digest="lifecycle">
        {d.lifecycle}
      </dd>
    </dl>
  );
}

function ConflictNote({ c, message }: { c?: Conflict; message: string }) {
  return (
    <div className="conflict" role="alert" id="conflict">
      <h3>Refused: conflict (409)</h3>
      <p>{message}</p>
      {c && (
        <>
          <p>
            Reason: <strong data-conflict-reason={c.reason}>{c.reason.replace(/_/g, " ")}</strong>
          </p>
          {c.paths.length > 0 && (
            <>
              <p>These paths changed in the work tree since the patch was made:</p>
              <ul>
                {c.paths.map((p) => (
                  <li key={p}>
                    <code>{p}</code>
                  </li>
                ))}
              </ul>
            </>
          )}
          {c.reason === "digest_mismatch" && (
            <>
              <h4>Approved digests</h4>
              <Digests title="Approved digests" d={c.expected} />
              <h4>Current digests</h4>
              <Digests title="Current digests" d={c.actual} />
            </>
          )}
        </>
      )}
      <p>
        {c?.reason === "work_tree_drift"
          ? "Nothing was written. Put these files back as the patch found them, or start a new change on the current source; the approval stands and the apply can be retried."
          : "Nothing was recorded or written. Reload to see the lifecycle as it is now."}
      </p>
    </div>
  );
}

// CancelPanel cancels a lifecycle that is not applying and not over: the
// phase running now is interrupted (its worker's turn, or its test run)
// and cleaned up before the answer comes.
export function CancelPanel({ detail, onDone }: { detail: LifecycleDetail; onDone: () => void }) {
  const { busy, err, run } = useAction();
  const st = detail.summary.status;
  // Awaiting approval, Reject is the cancel (RejectPanel).
  if (st !== "running" && st !== "approved") {
    return null;
  }
  const go = () =>
    run(async () => {
      await api.cancel(detail.summary.lifecycle_id, { note: "cancelled in the UI" });
      onDone();
    });
  return (
    <section className="cancel" aria-labelledby="cancel-h">
      <h2 id="cancel-h">Cancel</h2>
      <p>Cancelling ends the lifecycle: the phase running now is interrupted and its work cleaned up; nothing is applied.</p>
      <button type="button" onClick={go} disabled={busy} aria-describedby="cancel-h">
        {busy ? "Cancelling… (stopping the running phase)" : "Cancel this lifecycle"}
      </button>
      {err ? <ErrorNote error={err} /> : null}
    </section>
  );
}

// ApprovePanel offers the approval of the digests shown: first a review
// screen naming the files and digests, then the confirmation, which
// approves exactly those and applies. An approved lifecycle (an apply
// refused earlier, say) can be applied again.
export function ApprovePanel({ detail, onDone }: { detail: LifecycleDetail; onDone: () => void }) {
  const { busy, err, run } = useAction();
  const [reviewing, setReviewing] = useState(false);
  const [result, setResult] = useState<ApplyResult>();
  const [approval, setApproval] = useState<Approval | undefined>(detail.approval.approval);
  const reviewHeading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    if (reviewing) reviewHeading.current?.focus();
  }, [reviewing]);
  const a = detail.approval;
  const st = detail.summary.status;
  const canApply = st === "approved" && approval !== undefined;
  if (!a.awaiting && !canApply && !result && !err) {
    return (
      <>
        <h2>Approval</h2>
        <p className="muted">
          {st === "applied" ? "Applied." : "Not awaiting approval (the lifecycle is " + st.replace(/_/g, " ") + ")."}
        </p>
        {approval && <Digests title="Approved digests" d={approval.digests} />}
      </>
    );
  }
  const go = () =>
    run(async () => {
      const ap = approval ?? (await api.approve(detail.summary.lifecycle_id, { digests: a.digests }));
      setApproval(ap);
      setResult(await api.apply(detail.summary.lifecycle_id, { approval_id: ap.approval_id }));
      onDone();
    });
  const files = detail.patch?.files ?? [];
  return (
    <section className="approve" aria-labelledby="ap-h">
      <h2 id="ap-h">{approval ? "Apply the approved patch" : "Approve and apply"}</h2>
      {!approval && !reviewing && !result && (
        <>
          <p>Read the diff, the criteria and the verdicts above first. Approving takes two steps: a review of what the apply writes, then the confirmation.</p>
          <button type="button" id="review-approval" onClick={() => setReviewing(true)}>
            Review the approval…
          </button>
        </>
      )}
      {!approval && reviewing && !result && (
        <div className="approval-review" id="approval-review">
          <h3 id="ar-h" tabIndex={-1} ref={reviewHeading}>
            Confirm the approval
          </h3>
          <p>Approving lets Needle write these files of your work tree, as the diff shows:</p>
          <ul aria-label="Files the apply writes">
            {files.map((f) => (
              <li key={f.path} data-review-file={f.path}>
                <code>{f.path}</code> ({f.op})
              </li>
            ))}
          </ul>
          <p>The approval binds exactly these digests. If any of them, or the work tree under the patch, changes before the apply, nothing is written.</p>
          <Digests title="Digests to approve" d={a.digests} />
          <div className="buttons">
            <button type="button" id="confirm-approve" onClick={go} disabled={busy}>
              {busy ? "Applying…" : "Approve these digests and apply"}
            </button>
            <button type="button" className="secondary" id="approval-back" onClick={() => setReviewing(false)} disabled={busy}>
              Back
            </button>
          </div>
        </div>
      )}
      {approval && !result && (
        <>
          <p>This patch was approved with these digests; the apply writes it if the work tree under it is unchanged.</p>
          <Digests title="Approved digests" d={approval.digests} />
          <button type="button" id="apply-approved" onClick={go} disabled={busy}>
            {busy ? "Applying…" : "Apply the approved patch"}
          </button>
        </>
      )}
      <div aria-live="polite">
        {result && (
          <p className="ok" role="status" id="applied">
            Applied patch <span className="mono">{shortId(result.patch_id)}</span> to {result.files} file(s) at {fmtTime(result.applied_at)}.
          </p>
        )}
        {result?.notes?.map((n) => (
          <p key={n} className="muted" data-note="">
            Note: {n}
          </p>
        ))}
      </div>
      {err instanceof ApiError && err.status === 409 ? <ConflictNote c={err.detail.conflict} message={err.detail.message} /> : err ? <ErrorNote error={err} /> : null}
    </section>
  );
}

// RejectPanel rejects a patch that awaits approval. There is no reject
// verb in the lifecycle: it cancels the lifecycle, with the reason
// recorded in the journal, and nothing is applied.
export function RejectPanel({ detail, onDone }: { detail: LifecycleDetail; onDone: () => void }) {
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState("");
  const { busy, err, run } = useAction();
  if (detail.summary.status !== "awaiting_approval") return null;
  const go = () =>
    run(async () => {
      const why = reason.trim();
      await api.cancel(detail.summary.lifecycle_id, { note: "rejected in the UI" + (why ? ": " + why : "") });
      onDone();
    });
  return (
    <section className="reject" aria-labelledby="rej-h">
      <h2 id="rej-h">Reject</h2>
      <p>
        Needle's lifecycle has no separate reject: rejecting <strong>cancels</strong> the lifecycle and records your reason in its journal.
        Nothing is applied.
      </p>
      {!open ? (
        <button type="button" className="secondary" id="reject" onClick={() => setOpen(true)}>
          Reject this patch…
        </button>
      ) : (
        <>
          <label htmlFor="reject-reason">Why (recorded in the journal, optional)</label>
          <textarea id="reject-reason" rows={2} maxLength={400} value={reason} onChange={(e) => setReason(e.target.value)} />
          <div className="buttons">
            <button type="button" id="confirm-reject" onClick={go} disabled={busy}>
              {busy ? "Rejecting…" : "Reject: cancel the lifecycle"}
            </button>
            <button type="button" className="secondary" id="reject-back" onClick={() => setOpen(false)} disabled={busy}>
              Back
            </button>
          </div>
        </>
      )}
      {err ? <ErrorNote error={err} /> : null}
    </section>
  );
}
