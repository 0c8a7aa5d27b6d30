/**
 * A chat page on `useStream` (@langchain/langgraph-sdk/react), as an app built on LangGraph's clients would
 * write it, for test/e2e/langgraph-react.e2e.ts: the URL names the API, the key, the assistant and the
 * thread (kept there, so a reload reopens it); the history list is the threads of the assistant (a search
 * by `graph_id`, as Agent Chat UI's); an interrupt shows its action requests with Approve and Reject.
 * Every AI text the page rendered is kept in `window.renderedAi`, so the test can tell tokens arrived.
 */
import { Client, type Message, type Thread } from "@langchain/langgraph-sdk";
import { useStream } from "@langchain/langgraph-sdk/react";
import { type FormEvent, useCallback, useEffect, useMemo, useState } from "react";
import { createRoot } from "react-dom/client";

type Review = { action_requests: { name: string; args: Record<string, unknown> }[] };
declare global {
  interface Window {
    renderedAi: string[];
  }
}
window.renderedAi = [];

const params = new URL(location.href).searchParams;
const apiUrl = params.get("api") ?? "";
const apiKey = params.get("key") ?? "";
const assistantId = params.get("assistant") ?? "assistant";

function setThreadParam(id: string | null): void {
  const url = new URL(location.href);
  if (id === null) url.searchParams.delete("thread");
  else url.searchParams.set("thread", id);
  history.replaceState(null, "", url);
}

const text = (m: Message): string =>
  typeof m.content === "string" ? m.content : m.content.map((p) => ("text" in p && typeof p.text === "string" ? p.text : "")).join("");

function App() {
  const client = useMemo(() => new Client({ apiUrl, apiKey }), []);
  const [threadId, setThreadId] = useState<string | null>(params.get("thread"));
  const [threads, setThreads] = useState<Thread[] | null>(null);
  const [input, setInput] = useState("");
  const loadThreads = useCallback(() => client.threads.search({ metadata: { graph_id: assistantId }, limit: 100 }).then(setThreads), [client]);
  const stream = useStream<{ messages: Message[] }, { InterruptType: Review }>({
    apiUrl,
    apiKey,
    assistantId,
    threadId,
    fetchStateHistory: true,
    reconnectOnMount: true,
    onThreadId: (id) => {
      setThreadId(id);
      setThreadParam(id);
    },
    onFinish: () => void loadThreads(),
  });
  useEffect(() => void loadThreads(), [loadThreads]);

  const lastAi = [...stream.messages].reverse().find((m) => m.type === "ai");
  const lastAiText = lastAi ? text(lastAi) : "";
  useEffect(() => {
    if (lastAiText !== "" && window.renderedAi.at(-1) !== lastAiText) window.renderedAi.push(lastAiText);
  }, [lastAiText]);

  const send = (e: FormEvent) => {
    e.preventDefault();
    const content = input.trim();
    if (content === "") return;
    setInput("");
    stream.submit(
      { messages: [{ type: "human", content }] },
      {
        streamResumable: true,
        optimisticValues: (prev) => ({ ...prev, messages: [...(prev.messages ?? []), { type: "human", content }] }),
      },
    );
  };
  const decide = (type: "approve" | "reject") => stream.submit(undefined, { command: { resume: { decisions: [{ type }] } } });
  const open = (id: string | null) => {
    setThreadId(id);
    setThreadParam(id);
  };

  return (
    <main>
      <aside>
        <button id="new-thread" type="button" onClick={() => open(null)}>
          New thread
        </button>
        <ul id="threads" data-loaded={threads !== null}>
          {(threads ?? []).map((t) => (
            <li key={t.thread_id}>
              <button type="button" className="thread" data-thread={t.thread_id} data-status={t.status} onClick={() => open(t.thread_id)}>
                {t.thread_id}
              </button>
            </li>
          ))}
        </ul>
      </aside>
      <section>
        <p id="state" data-loading={stream.isLoading} data-thread={threadId ?? ""}>
          {stream.isLoading ? "Running…" : "Idle"}
        </p>
        {stream.error !== undefined && stream.error !== null && <p id="error">{String(stream.error)}</p>}
        <ol id="messages">
          {stream.messages.map((m, i) => (
            <li key={m.id ?? i} className="msg" data-type={m.type}>
              {text(m)}
              {m.type === "ai" && (m.tool_calls ?? []).map((c) => <code key={c.id ?? c.name}>{`${c.name}(${JSON.stringify(c.args)})`}</code>)}
            </li>
          ))}
        </ol>
        {stream.interrupt?.value && (
          <div id="interrupt">
            {stream.interrupt.value.action_requests.map((a) => (
              <p key={a.name} className="action" data-name={a.name}>
                {`${a.name} ${JSON.stringify(a.args)}`}
              </p>
            ))}
            <button id="approve" type="button" onClick={() => decide("approve")}>
              Approve
            </button>
            <button id="reject" type="button" onClick={() => decide("reject")}>
              Reject
            </button>
          </div>
        )}
        <form id="composer" onSubmit={send}>
          <input id="input" value={input} onChange={(e) => setInput(e.target.value)} />
          <button id="send" type="submit" disabled={stream.isLoading}>
            Send
          </button>
          <button id="stop" type="button" disabled={!stream.isLoading} onClick={() => void stream.stop()}>
            Stop
          </button>
        </form>
      </section>
    </main>
  );
}

const root = document.getElementById("root");
if (root) createRoot(root).render(<App />);
