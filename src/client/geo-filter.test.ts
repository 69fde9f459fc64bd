// Proves the geo filter of a translated start: the metadata round-trips and refuses what is not
// one, covered records below filterUntil are skipped (own records by their offset, applied ones
// by their origin offset), uncovered ones and everything at or past filterUntil are kept, and
// commits carry the position only while below filterUntil.
import { describe, expect, it } from 'vitest';
import { GeoFilter, geoMetadata, isCovered, parseGeoMetadata } from './geo-filter.ts';

const position = { from: 'us-east', vector: { 'us-east': 11, 'eu-west': 0 }, filterUntil: 4 };

describe('geo metadata', () => {
  it('round-trips, and anything else is plain metadata', () => {
    expect(parseGeoMetadata(geoMetadata(position))).toEqual(position);
    for (const bad of ['', 'hello', '{', '{"geo":1}', '{"geo":{"from":"a","vector":{"a":"1"},"filterUntil":3}}', '{"geo":{"from":"a","vector":{},"filterUntil":-2}}', '{"geo":{"vector":{},"filterUntil":3}}']) {
      expect(parseGeoMetadata(bad), bad).toBeNull();
    }
  });

  it('covers origin offsets at or below the entry of their origin only', () => {
    expect(isCovered(position.vector, 'us-east', 11)).toBe(true);
    expect(isCovered(position.vector, 'us-east', 12)).toBe(false);
    expect(isCovered(position.vector, 'ap-south', 0)).toBe(false);
  });
});

describe('the filter', () => {
  const f = new GeoFilter(position);

  it('skips covered records below filterUntil, keeps the others', () => {
    // Own records of eu-west (the region read from): their offset is their origin offset.
    expect(f.skips({ offset: 0, originRegion: null, originOffset: -1 }, 'eu-west')).toBe(true);
    expect(f.skips({ offset: 1, originRegion: null, originOffset: -1 }, 'eu-west')).toBe(false);
    expect(f.skips({ offset: 2, originRegion: 'us-east', originOffset: 10 }, 'eu-west')).toBe(true);
    expect(f.skips({ offset: 3, originRegion: 'us-east', originOffset: 12 }, 'eu-west')).toBe(false);
    // At or past filterUntil nothing is skipped, covered or not.
    expect(f.skips({ offset: 4, originRegion: 'us-east', originOffset: 5 }, 'eu-west')).toBe(false);
  });

  it('carries the position on commits below filterUntil, plain metadata from there on', () => {
    expect(parseGeoMetadata(f.metadataFor(3))).toEqual(position);
    expect(f.metadataFor(4)).toBe('');
    expect(f.doneAt(3)).toBe(false);
    expect(f.doneAt(4)).toBe(true);
  });
});
