/** The drill's timeline: snapshots of every region diffed into events, and detection times. */
export { CAPACITY_CHANGE_MIN, detectMs, diffSnapshots, type RegionSnapshot, type TimelineEvent } from './events.ts';
export { POLL_CALL_MS, POLL_EVERY_MS_DEFAULT, TIMELINE_EVENTS_MAX, TimelineRecorder, type TimelineRecorderOptions } from './recorder.ts';
