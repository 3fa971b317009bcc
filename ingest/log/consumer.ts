// The writers' shared durable consumer, named apart from index.ts so that what reads its state (the metrics) does
// not load the NATS client: a server without INGEST_LOG never does (ingest/index.ts imports the log on demand).
export const WRITER_CONSUMER = 'readings-writer'
