// The Prometheus text exposition of our small registry: exact lines, cumulative buckets, escaped labels.
import { describe, expect, test } from 'bun:test'
import { MetricsRegistry } from '../../src/metrics.ts'

describe('metrics registry', () => {
  test('counters, histograms and scrape-time gauges render in the Prometheus text format', async () => {
    const registry = new MetricsRegistry()
    const requests = registry.counter('http_requests_total', 'Requests answered.', ['route', 'status'])
    const latency = registry.histogram('http_request_duration_seconds', 'Time to answer.', ['route'], [0.01, 0.1])
    let depth = 7
    registry.gauge('ingest_queued_readings', 'Readings waiting to be written.', [], () => [{ value: depth }])
    requests.inc(['/api/v1/animals', '200'])
    requests.inc(['/api/v1/animals', '200'])
    requests.inc(['/a"b\\c\nd', '500'])
    for (const seconds of [0.005, 0.05, 0.05, 3]) latency.observe(['/api/v1/animals'], seconds)
    depth = 9
    expect(await registry.render()).toBe([
      '# HELP http_requests_total Requests answered.',
      '# TYPE http_requests_total counter',
      'http_requests_total{route="/api/v1/animals",status="200"} 2',
      'http_requests_total{route="/a\\"b\\\\c\\nd",status="500"} 1',
      '# HELP http_request_duration_seconds Time to answer.',
      '# TYPE http_request_duration_seconds histogram',
      'http_request_duration_seconds_bucket{route="/api/v1/animals",le="0.01"} 1',
      'http_request_duration_seconds_bucket{route="/api/v1/animals",le="0.1"} 3',
      'http_request_duration_seconds_bucket{route="/api/v1/animals",le="+Inf"} 4',
      'http_request_duration_seconds_sum{route="/api/v1/animals"} 3.105',
      'http_request_duration_seconds_count{route="/api/v1/animals"} 4',
      '# HELP ingest_queued_readings Readings waiting to be written.',
      '# TYPE ingest_queued_readings gauge',
      'ingest_queued_readings 9',
      '',
    ].join('\n'))
    expect(requests.get(['/api/v1/animals', '200'])).toBe(2)
  })

  test('a series handle counts into the same line as inc and observe with its labels', async () => {
    const registry = new MetricsRegistry()
    const requests = registry.counter('requests_total', 'Requests.', ['route', 'status'])
    const latency = registry.histogram('duration_seconds', 'Time.', ['route'], [0.01, 0.1])
    const ok = requests.series(['/ping', '204'])
    ok.inc()
    requests.inc(['/ping', '204'])
    ok.inc(3)
    const pings = latency.series(['/ping'])
    pings.observe(0.005)
    latency.observe(['/ping'], 0.05)
    pings.observe(0.2)
    expect(requests.get(['/ping', '204'])).toBe(5)
    expect(await registry.render()).toBe([
      '# HELP requests_total Requests.',
      '# TYPE requests_total counter',
      'requests_total{route="/ping",status="204"} 5',
      '# HELP duration_seconds Time.',
      '# TYPE duration_seconds histogram',
      'duration_seconds_bucket{route="/ping",le="0.01"} 1',
      'duration_seconds_bucket{route="/ping",le="0.1"} 2',
      'duration_seconds_bucket{route="/ping",le="+Inf"} 3',
      'duration_seconds_sum{route="/ping"} 0.255',
      'duration_seconds_count{route="/ping"} 3',
      '',
    ].join('\n'))
  })
})
