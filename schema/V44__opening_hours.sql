-- Issue 49: stores have opening hours. A company's screens play only while its stores are open,
-- in the company's own time zone (`src/opening_hours.rs`): the JSON of a list of open days
-- (`[{"day":"monday","opens":"08:00","closes":"21:00"}, ...]`, a day not listed is closed), as
-- `GET /companies/{id}` shows it. A company made before, or through the API, is open around the
-- clock; the fixture companies have their stores' hours.
ALTER TABLE companies ADD COLUMN opening_hours TEXT NOT NULL DEFAULT '[{"day":"monday","opens":"00:00","closes":"24:00"},{"day":"tuesday","opens":"00:00","closes":"24:00"},{"day":"wednesday","opens":"00:00","closes":"24:00"},{"day":"thursday","opens":"00:00","closes":"24:00"},{"day":"friday","opens":"00:00","closes":"24:00"},{"day":"saturday","opens":"00:00","closes":"24:00"},{"day":"sunday","opens":"00:00","closes":"24:00"}]';
