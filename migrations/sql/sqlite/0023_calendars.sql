-- Calendars (issue 31); see the PostgreSQL migration of the same number.
CREATE TABLE calendars (
    namespace   text NOT NULL,
    name        text NOT NULL,
    description text NOT NULL,
    dates       text NOT NULL,
    weekend     text NOT NULL,
    version     integer NOT NULL,
    created_at  text NOT NULL,
    updated_at  text NOT NULL,
    PRIMARY KEY (namespace, name)
);
