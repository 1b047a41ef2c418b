-- scripts/tpch/data.sql -- fills the TPC-H-shaped schema (schema.sql)
-- with data computed from the keys alone (tpch.rnd: a hash of key and
-- salt, no random()), so the same scale gives the same rows on every run
-- and every PostgreSQL.  psql variable scale: 1 means a lineitem of about
-- six million rows; the other tables are proportional (region and nation
-- fixed).  Run by load.sh inside one transaction.
SET search_path = tpch;

SELECT greatest(4, round(10000 * :scale))::int AS n_supp,
	   greatest(10, round(200000 * :scale))::int AS n_part,
	   greatest(10, round(150000 * :scale))::int AS n_cust,
	   greatest(10, round(1500000 * :scale))::int AS n_ord \gset

INSERT INTO region
SELECT r, (ARRAY['AFRICA', 'AMERICA', 'ASIA', 'EUROPE', 'MIDDLE EAST'])[r + 1], blurb(r, 1, 6)
  FROM generate_series(0, 4) AS r;

-- 25 nations, five a region
INSERT INTO nation
SELECT n - 1, name, (n - 1) / 5, blurb(n, 2, 8)
  FROM unnest(ARRAY['ALGERIA', 'ETHIOPIA', 'KENYA', 'MOROCCO', 'MOZAMBIQUE',
					'ARGENTINA', 'BRAZIL', 'CANADA', 'PERU', 'UNITED STATES',
					'CHINA', 'INDIA', 'INDONESIA', 'JAPAN', 'VIETNAM',
					'FRANCE', 'GERMANY', 'ROMANIA', 'RUSSIA', 'UNITED KINGDOM',
					'EGYPT', 'IRAN', 'IRAQ', 'JORDAN', 'SAUDI ARABIA'])
	   WITH ORDINALITY AS u(name, n);

INSERT INTO supplier
SELECT s, 'Supplier#' || lpad(s::text, 9, '0'), md5(s::text),
	   rint(s, 3, 0, 24) AS nat,
	   (10 + rint(s, 3, 0, 24)) || '-' || rint(s, 4, 100, 999) || '-' || rint(s, 5, 1000, 9999),
	   round((rnd(s, 6) * 10998.99 - 999.99)::numeric, 2),
	   -- one supplier in 200 has had complaints (the NOT IN of one query)
	   CASE WHEN s % 200 = 7 THEN 'Customer ' || blurb(s, 7, 2) || ' Complaints'
			ELSE blurb(s, 7, 7) END
  FROM generate_series(1, :n_supp) AS s;

INSERT INTO part
SELECT p,
	   pick(p, 10, ARRAY['almond', 'azure', 'beige', 'blush', 'chiffon', 'coral',
						 'cream', 'forest', 'ghost', 'honeydew', 'ivory', 'khaki',
						 'lavender', 'linen', 'magenta', 'navy', 'olive', 'orchid',
						 'peru', 'plum', 'rose', 'salmon', 'sienna', 'tan', 'violet'])
		   || ' ' || pick(p, 11, ARRAY['steel', 'smoke', 'spring', 'misty', 'frosted', 'pale',
									   'dark', 'light', 'metallic', 'powder'])
		   || ' ' || pick(p, 12, ARRAY['green', 'red', 'blue', 'yellow', 'black', 'white',
									   'brown', 'purple', 'orange', 'grey']),
	   'Manufacturer#' || rint(p, 13, 1, 5),
	   'Brand#' || rint(p, 13, 1, 5) || rint(p, 14, 1, 5),
	   pick(p, 15, ARRAY['STANDARD', 'SMALL', 'MEDIUM', 'LARGE', 'ECONOMY', 'PROMO'])
		   || ' ' || pick(p, 16, ARRAY['ANODIZED', 'BURNISHED', 'PLATED', 'POLISHED', 'BRUSHED'])
		   || ' ' || pick(p, 17, ARRAY['TIN', 'NICKEL', 'BRASS', 'STEEL', 'COPPER']),
	   rint(p, 18, 1, 50),
	   pick(p, 19, ARRAY['SM', 'MED', 'LG', 'JUMBO', 'WRAP'])
		   || ' ' || pick(p, 20, ARRAY['CASE', 'BOX', 'BAG', 'JAR', 'PKG', 'PACK', 'CAN', 'DRUM']),
	   round(900 + (p % 20000) / 10.0 + (p % 1000) / 100.0, 2),
	   blurb(p, 21, 4)
  FROM generate_series(1, :n_part) AS p;

-- four suppliers a part, spread over the suppliers (distinct as
-- n_supp >= 4)
INSERT INTO partsupp
SELECT p, ((p + i * (:n_supp / 4)) % :n_supp) + 1, rint(p * 4 + i, 22, 1, 9999),
	   round((1 + rnd(p * 4 + i, 23) * 999)::numeric, 2), blurb(p * 4 + i, 24, 10)
  FROM generate_series(1, :n_part) AS p, generate_series(0, 3) AS i;

INSERT INTO customer
SELECT c, 'Customer#' || lpad(c::text, 9, '0'), md5((-c)::text),
	   rint(c, 30, 0, 24),
	   (10 + rint(c, 30, 0, 24)) || '-' || rint(c, 31, 100, 999) || '-' || rint(c, 32, 1000, 9999),
	   round((rnd(c, 33) * 10998.99 - 999.99)::numeric, 2),
	   pick(c, 34, ARRAY['AUTOMOBILE', 'BUILDING', 'FURNITURE', 'HOUSEHOLD', 'MACHINERY']),
	   blurb(c, 35, 8)
  FROM generate_series(1, :n_cust) AS c;

-- An order's date and customer are functions of its key, so the lines can
-- be made first and the order's status and total computed from them.
-- Every third customer places no orders (the NOT EXISTS queries).
CREATE FUNCTION pg_temp.odate(o bigint) RETURNS date LANGUAGE sql IMMUTABLE
	AS $$ SELECT date '1992-01-01' + tpch.rint(o, 40, 0, 2405) $$;

INSERT INTO lineitem
SELECT o, pk, ((pk + si * (:n_supp / 4)) % :n_supp) + 1, ln,
	   qty, round(qty * (900 + (pk % 20000) / 10.0 + (pk % 1000) / 100.0), 2),
	   rint(o * 8 + ln, 43, 0, 10) / 100.0, rint(o * 8 + ln, 44, 0, 8) / 100.0,
	   CASE WHEN ship + rcpt > date '1995-06-17' THEN 'N'
			WHEN rnd(o * 8 + ln, 45) < 0.5 THEN 'R' ELSE 'A' END,
	   CASE WHEN ship > date '1995-06-17' THEN 'O' ELSE 'F' END,
	   ship, pg_temp.odate(o) + rint(o * 8 + ln, 46, 30, 90), ship + rcpt,
	   pick(o * 8 + ln, 47, ARRAY['DELIVER IN PERSON', 'COLLECT COD', 'NONE', 'TAKE BACK RETURN']),
	   pick(o * 8 + ln, 48, ARRAY['REG AIR', 'AIR', 'RAIL', 'SHIP', 'TRUCK', 'MAIL', 'FOB']),
	   blurb(o * 8 + ln, 49, 3)
  FROM generate_series(1, :n_ord) AS o,
	   LATERAL generate_series(1, rint(o, 41, 1, 7)) AS ln,
	   LATERAL (SELECT rint(o * 8 + ln, 42, 1, :n_part) AS pk,
					   rint(o * 8 + ln, 50, 0, 3) AS si,
					   rint(o * 8 + ln, 51, 1, 50)::numeric AS qty,
					   pg_temp.odate(o) + rint(o * 8 + ln, 52, 1, 121) AS ship,
					   rint(o * 8 + ln, 53, 1, 30) AS rcpt) AS v;

INSERT INTO orders
SELECT o, c, CASE WHEN l.open = 0 THEN 'F' WHEN l.open = l.n THEN 'O' ELSE 'P' END,
	   l.total, pg_temp.odate(o),
	   pick(o, 60, ARRAY['1-URGENT', '2-HIGH', '3-MEDIUM', '4-NOT SPECIFIED', '5-LOW']),
	   'Clerk#' || lpad(rint(o, 61, 1, greatest(1, round(1000 * :scale)::int))::text, 9, '0'),
	   0, blurb(o, 62, 6) || CASE WHEN o % 50 = 3 THEN ' special requests' ELSE '' END
  FROM generate_series(1, :n_ord) AS o
	   CROSS JOIN LATERAL (SELECT 3 * rint(o, 63, 0, (:n_cust - 1) / 3) + rint(o, 64, 1, 2) AS c0) AS k
	   CROSS JOIN LATERAL (SELECT least(k.c0, :n_cust) AS c) AS kk
	   JOIN (SELECT l_orderkey, count(*) AS n, count(*) FILTER (WHERE l_linestatus = 'O') AS open,
					round(sum(l_extendedprice * (1 + l_tax) * (1 - l_discount)), 2) AS total
			   FROM lineitem GROUP BY l_orderkey) AS l ON l.l_orderkey = o;
