package store

import "database/sql"

// collect reads every row of a query with scan, closes the rows and
// returns what scan made of them, in order. err is the query's own error,
// so a call can pass on what the query returned. Any error, the query's,
// one scan's or the one the rows end with, is reported under op, and
// nothing is returned with it. scan reads the current row only: it does
// not advance or close the rows.
func collect[T any](op string, rows *sql.Rows, err error, scan func(rowScanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, classify(op, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, classify(op, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(op, err)
	}
	return out, nil
}

// scanValue reads a row of one column, for collect.
func scanValue[T any](r rowScanner) (v T, err error) {
	err = r.Scan(&v)
	return v, err
}
