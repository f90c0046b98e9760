import { LifecycleSummary } from "../api";
import { fmtTime } from "../format";

export function LifecyclesView({ items }: { items: LifecycleSummary[] }) {
  return (
    <section aria-labelledby="lc-h">
      <h1 id="lc-h">Change lifecycles</h1>
      <table>
        <caption>Supervised changes, most recently updated first.</caption>
        <thead>
          <tr>
            <th scope="col">Lifecycle</th>
            <th scope="col">Task</th>
            <th scope="col">Phase</th>
            <th scope="col">Status</th>
            <th scope="col">Updated</th>
            <th scope="col" className="num">Events</th>
          </tr>
        </thead>
        <tbody>
          {items.length === 0 && (
            <tr>
              <td colSpan={6} className="muted">
                No lifecycles yet. Start one with <code>needle change start</code>.
              </td>
            </tr>
          )}
          {items.map((l) => (
            <tr key={l.lifecycle_id} data-lifecycle={l.lifecycle_id}>
              <td>
                <a href={`#/lifecycles/${l.lifecycle_id}`} className="mono">
                  {l.lifecycle_id}
                </a>
                <div className="muted mono">{l.change_id}</div>
              </td>
              <td>
                {l.corrupt ? (
                  <span className="corrupt" data-corrupt={l.lifecycle_id}>
                    {l.corrupt}
                  </span>
                ) : (
                  l.task
                )}
              </td>
              <td>{l.phase}</td>
              <td>
                <StatusBadge s={l} />
              </td>
              <td>{fmtTime(l.updated_at)}</td>
              <td className="num">{l.events}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function StatusBadge({ s }: { s: LifecycleSummary }) {
  return (
    <span className={"badge status-" + s.status} data-status={s.status}>
      {s.status.replace(/_/g, " ")}
      {s.reason && s.reason !== s.status ? ` (${s.reason.replace(/_/g, " ")})` : ""}
    </span>
  );
}
