/**
 * The order in which a member probes the others: round-robin over a shuffled list, reshuffled
 * after each full round, new members inserted at a random place (SWIM section 4.3, as memberlist
 * runs it). Round-robin bounds the time until a failed member is probed by everyone at one round
 * of n − 1 probe intervals, where picking at random would leave some unprobed for long; the
 * shuffle keeps rounds of different members out of step.
 */

/** Round-robin over a shuffled list of member ids. */
export class ProbeOrder {
  private ids: string[] = [];
  private readonly present = new Set<string>();
  private index = 0;

  constructor(private readonly random: () => number) {}

  get size(): number {
    return this.ids.length;
  }

  /** Adds `id` at a random place (no-op when present). */
  add(id: string): void {
    if (this.present.has(id)) return;
    this.present.add(id);
    const at = Math.floor(this.random() * (this.ids.length + 1));
    this.ids.splice(at, 0, id);
    if (at < this.index) this.index++;
  }

  /** Removes `id` (no-op when absent). */
  remove(id: string): void {
    if (!this.present.delete(id)) return;
    const at = this.ids.indexOf(id);
    this.ids.splice(at, 1);
    if (at < this.index) this.index--;
  }

  /** The next id for which `eligible` holds, or null after one full pass finds none. */
  next(eligible: (id: string) => boolean): string | null {
    // One pass over the list at most, plus the reshuffle at its end: a bounded loop.
    for (let checked = 0; checked < this.ids.length; checked++) {
      if (this.index >= this.ids.length) this.reshuffle();
      const id = this.ids[this.index++]!;
      if (eligible(id)) return id;
    }
    return null;
  }

  private reshuffle(): void {
    this.index = 0;
    for (let i = this.ids.length - 1; i > 0; i--) {
      const j = Math.floor(this.random() * (i + 1));
      [this.ids[i], this.ids[j]] = [this.ids[j]!, this.ids[i]!];
    }
  }
}
