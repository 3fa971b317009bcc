// Metrics a sensor channel can measure (reference data for /environment/metrics and channel mapping).
export interface MetricRecord {
  id: string
  name: string
  unit: string
  description: string
  /** Physically plausible range; readings outside it are still stored (sensors drift) but flagged by clients. */
  min: number
  max: number
}

export const METRICS: readonly MetricRecord[] = [
  { id: 'co2', name: 'Carbon dioxide', unit: 'ppm', description: 'CO₂ concentration in the enclosure air.', min: 0, max: 10_000 },
  { id: 'humidity', name: 'Relative humidity', unit: '%', description: 'Relative humidity of the enclosure air.', min: 0, max: 100 },
  { id: 'illuminance', name: 'Illuminance', unit: 'lx', description: 'Visible light level.', min: 0, max: 200_000 },
  { id: 'power', name: 'Power draw', unit: 'W', description: 'Electrical power drawn by heating or lighting.', min: 0, max: 10_000 },
  { id: 'pressure', name: 'Air pressure', unit: 'hPa', description: 'Barometric pressure.', min: 800, max: 1_100 },
  { id: 'surface_temperature', name: 'Surface temperature', unit: '°C', description: 'Basking-spot or floor surface temperature.', min: -20, max: 80 },
  { id: 'temperature', name: 'Air temperature', unit: '°C', description: 'Enclosure air temperature.', min: -20, max: 60 },
  { id: 'uv_index', name: 'UV index', unit: 'UVI', description: 'Ultraviolet index at the basking zone.', min: 0, max: 20 },
  { id: 'water_temperature', name: 'Water temperature', unit: '°C', description: 'Water temperature in aquatic or paludarium setups.', min: -5, max: 50 },
]
