/**
 * Built-in benchmark prompt sets: `short` (~8 tokens each), `medium` (~100 tokens), `long` (~500+ tokens)
 * and `custom` (the caller's text). Token counts are for a 32k-entry llama SentencePiece vocabulary;
 * small vocabularies (stories260K's 512 entries) give two to three times as many tokens.
 *
 * All text here was written for this project (plain English prose, no quoted material).
 */
import type { BenchPrompt } from './types.ts';

/** Names of the built-in sets. */
export const PROMPT_SET_NAMES = ['short', 'medium', 'long'] as const;
export type PromptSetName = (typeof PROMPT_SET_NAMES)[number];

const SHORT: BenchPrompt[] = [
  { name: 'short-1', text: 'Once upon a time, there was a' },
  { name: 'short-2', text: 'The little dog ran to the park and' },
  { name: 'short-3', text: 'Tom and his sister found a box that' },
];

const MEDIUM: BenchPrompt[] = [
  {
    name: 'medium-1',
    text:
      'Mia lived in a small house at the edge of a quiet town. Every morning she walked past the bakery, ' +
      'where the smell of warm bread drifted into the street, and waved to the old man who swept the ' +
      'steps. One day the bakery was closed, and a handwritten note hung on the door. Mia stood on her ' +
      'toes to read it. The note said that the baker had lost his cat, a grey one with a white tail, and ' +
      'asked anyone who saw it to knock on the green door next to the shop. Mia decided',
  },
  {
    name: 'medium-2',
    text:
      'A good benchmark measures one thing at a time and says clearly what it measured. When a program ' +
      'generates text one token after another, two numbers matter most to the person waiting: how long ' +
      'it takes before the first word appears, and how quickly the rest follows. The first depends on ' +
      'reading the whole prompt, which can use the hardware fully, while the second is usually limited by ' +
      'how fast the weights can be read from memory for every new token. To explain the difference to a ' +
      'friend, you could say that',
  },
];

const LONG: BenchPrompt[] = [
  {
    name: 'long-1',
    text: [
      'The village of Alder Creek sat in a narrow valley between two wooded hills, and for most of the year ' +
        'nothing much happened there. The river ran clear and cold in spring, slow and warm in summer, and in ' +
        'autumn it carried red and yellow leaves past the mill, where children dropped sticks from the bridge ' +
        'and raced to the other side to see whose stick came out first. The miller, a tall woman named Hana, ' +
        'kept a chalk board by the door with the names of the winners, and she never rubbed a name out until ' +
        'the first snow fell.',
      'Hana had run the mill for twenty years. Before her, her father had run it, and before him an uncle ' +
        'whom nobody in the village remembered very well. The wheel was older than all of them. It turned ' +
        'slowly, with a low wooden groan that people said you could hear from the top of the east hill on a ' +
        'still morning. When the wheel stopped, which happened perhaps once a year, the whole village noticed ' +
        'the silence before they noticed anything else.',
      'One grey morning in early winter the wheel stopped, and it did not start again. Hana climbed down to ' +
        'the water with a lantern and found that a fallen tree had wedged itself between the paddles and the ' +
        'stone wall of the race. It was too heavy to move by hand. She walked up to the square, rang the small ' +
        'bell that hung outside the post office, and waited while people came out of their houses pulling on ' +
        'coats and boots. The baker came with flour still on his arms, the two teachers came together, and ' +
        'the old carpenter, who was nearly ninety, came slowly with a stick in each hand and a rope over his ' +
        'shoulder.',
      'They stood on the bank and looked at the tree for a long time. Some people wanted to cut it into ' +
        'pieces with saws, but the water was too fast and too cold for anyone to stand in it for long. Others ' +
        'wanted to wait for spring, when the river would be lower, but the village needed flour before then. ' +
        'The carpenter listened to everyone, and when they had finished talking he pointed at the big oak on ' +
        'the far bank and said that a rope, a pulley and a little patience could do what twenty arms could ' +
        'not.',
      'So they built a pulley from an old cart wheel, tied the rope around the trunk, ran it over the wheel ' +
        'and back across the river, and then the whole village took hold of the rope and pulled. At first ' +
        'nothing moved. Then the tree shifted with a crack that made the children jump, rolled half a turn, ' +
        'and slid free into the current, which carried it away under the bridge and around the bend. A moment ' +
        'later the mill wheel groaned, hesitated, and began to turn.',
      'That evening Hana wrote a new line on the chalk board by the door. It did not name a child who had ' +
        'won a race with a stick. It named everyone who had held the rope, from the baker to the smallest ' +
        'girl, who had held only the very end of it and pulled with both hands. The list filled the whole ' +
        'board, and Hana did not rub it out when the first snow fell, or the second. When spring came and the ' +
        'children returned to the bridge with their sticks, they had to find a new board, and Hana hung it ' +
        'beside the old one. Years later, when people asked about the winter the wheel stopped, the old ' +
        'board was still there, and the story they told always began the same way:',
    ].join('\n\n'),
  },
];

/** The built-in sets. */
export const PROMPT_SETS: Readonly<Record<PromptSetName, readonly BenchPrompt[]>> = {
  short: SHORT,
  medium: MEDIUM,
  long: LONG,
};

/** True for a built-in set name. */
export function isPromptSetName(s: string): s is PromptSetName {
  return (PROMPT_SET_NAMES as readonly string[]).includes(s);
}

/**
 * Prompts for a selection: a built-in set name, `all` (every built-in set in order) or `custom` (the
 * given text, named `custom`). @throws RangeError for an unknown name or `custom` without text.
 */
export function promptsFor(selection: PromptSetName | 'all' | 'custom', customText?: string): BenchPrompt[] {
  if (selection === 'custom') {
    if (!customText) throw new RangeError('the custom prompt set needs a prompt text');
    return [{ name: 'custom', text: customText }];
  }
  if (selection === 'all') return PROMPT_SET_NAMES.flatMap((n) => PROMPT_SETS[n].map((p) => ({ ...p })));
  if (!isPromptSetName(selection)) throw new RangeError(`unknown prompt set ${selection}`);
  return PROMPT_SETS[selection].map((p) => ({ ...p }));
}

/**
 * Parses a prompts file: a JSON array of strings or `{name?, text}` objects, or else plain text with one
 * prompt per non-empty line. Unnamed prompts are called `prompt-1`, `prompt-2`, …
 * @throws RangeError when the file holds no prompt or a JSON entry has no text.
 */
export function parsePromptsFile(content: string): BenchPrompt[] {
  const trimmed = content.trim();
  let items: (string | { name?: unknown; text?: unknown })[];
  if (trimmed.startsWith('[')) {
    const parsed: unknown = JSON.parse(trimmed);
    if (!Array.isArray(parsed)) throw new RangeError('a JSON prompts file must hold an array');
    items = parsed;
  } else {
    items = trimmed.split(/\r?\n/).filter((l) => l.trim() !== '');
  }
  if (items.length === 0) throw new RangeError('the prompts file holds no prompt');
  return items.map((it, i) => {
    if (typeof it === 'string') return { name: `prompt-${i + 1}`, text: it };
    if (typeof it !== 'object' || it === null || typeof it.text !== 'string' || it.text === '')
      throw new RangeError(`prompt ${i + 1} has no "text" string`);
    return { name: typeof it.name === 'string' && it.name ? it.name : `prompt-${i + 1}`, text: it.text };
  });
}
