/**
 * Texts for recall-by-meaning tests on every surface: each planted text shares no search word with
 * the question that needs it, and the other talk shares none with either.
 */

export const planted: { question: string; turn: string }[] = [
  { question: "Which relative is visiting?", turn: "My sister flew in from Lisbon last night and stays with us until Sunday." },
  { question: "What are her hobbies?", turn: "I paint watercolours at the lake most Saturdays, and I knit scarves in winter." },
  { question: "What pet does the family own?", turn: "Our puppy chewed through another pair of slippers this morning." },
  { question: "Is anyone unwell?", turn: "Grandpa caught pneumonia, so the doctor kept him at the hospital." },
];

export const OTHER = [
  "The quarterly report needs two more charts before Friday's review.",
  "Can you check whether the build server finished the nightly job?",
  "I moved the meeting with the vendor to half past three.",
  "The spreadsheet formulas broke after someone renamed the column.",
  "Traffic on the ring road was slow again because of roadworks.",
  "Let's order more printer paper and toner for the office.",
  "The invoice from the contractor is still waiting for approval.",
  "Our new intern starts on the database migration next week.",
  "Remember to rotate the API keys before the audit.",
  "The train was delayed twenty minutes at the central station.",
  "Please update the slides with the latest sales numbers.",
  "The projector in room four keeps flickering during calls.",
];
