const b64 = (o: unknown) => btoa(JSON.stringify(o));

/** A LangGraph checkpoint put op for POST /v1/langgraph/threads/:id/batch (opaque bytes to the server), fresh per call. */
export const checkpointPut = () => ({
  op: "put",
  ns: "",
  id: `1ef${crypto.randomUUID().slice(0, 8)}`,
  parent_id: null,
  v: 4,
  versions: {},
  checkpoint: { t: "json", b: b64({ v: 4, id: "x", ts: "", channel_values: {}, channel_versions: {}, versions_seen: {} }) },
  metadata: { t: "json", b: b64({}) },
  blobs: [],
});
