-- scripts/tpch/queries.sql -- the 22 analytic queries of the accuracy run
-- (scripts/bench.sh --tpch), over the TPC-H-shaped schema of schema.sql.
-- Written for this bench in the spirit of a decision-support workload:
-- aggregations, joins of three to eight tables, correlated and
-- uncorrelated subqueries, EXISTS / NOT EXISTS, GROUP BY, ORDER BY, LIMIT.
-- Each query starts with a line "-- Qnn: title" and ends with ";" at the
-- end of a line; the runner splits the file there.  Unqualified names:
-- the runner sets search_path = tpch.

-- Q01: shipping summary by ship mode and line status
SELECT l_shipmode, l_linestatus, count(*) AS lines,
	   sum(l_quantity) AS qty, sum(l_extendedprice * (1 - l_discount)) AS net,
	   avg(l_discount) AS avg_disc, max(l_receiptdate - l_shipdate) AS longest
  FROM lineitem
 WHERE l_shipdate < date '1998-03-01'
 GROUP BY l_shipmode, l_linestatus
 ORDER BY l_shipmode, l_linestatus;

-- Q02: cheapest European offer for mid-sized copper parts
SELECT s.s_name, n.n_name, p.p_partkey, p.p_mfgr, ps.ps_supplycost
  FROM part p
  JOIN partsupp ps ON ps.ps_partkey = p.p_partkey
  JOIN supplier s ON s.s_suppkey = ps.ps_suppkey
  JOIN nation n ON n.n_nationkey = s.s_nationkey
  JOIN region r ON r.r_regionkey = n.n_regionkey
 WHERE p.p_size BETWEEN 20 AND 24 AND p.p_type LIKE '%COPPER'
   AND r.r_name = 'EUROPE'
   AND ps.ps_supplycost = (SELECT min(ps2.ps_supplycost)
							 FROM partsupp ps2
							 JOIN supplier s2 ON s2.s_suppkey = ps2.ps_suppkey
							 JOIN nation n2 ON n2.n_nationkey = s2.s_nationkey
							WHERE ps2.ps_partkey = p.p_partkey AND n2.n_regionkey = r.r_regionkey)
 ORDER BY s.s_acctbal DESC, p.p_partkey
 LIMIT 50;

-- Q03: open orders of the machinery segment with the most unshipped value
SELECT o.o_orderkey, o.o_orderdate, sum(l.l_extendedprice * (1 - l.l_discount)) AS value
  FROM customer c
  JOIN orders o ON o.o_custkey = c.c_custkey
  JOIN lineitem l ON l.l_orderkey = o.o_orderkey
 WHERE c.c_mktsegment = 'MACHINERY'
   AND o.o_orderdate < date '1996-02-10' AND l.l_shipdate > date '1996-02-10'
 GROUP BY o.o_orderkey, o.o_orderdate
 ORDER BY value DESC, o.o_orderdate
 LIMIT 20;

-- Q04: orders of a half-year with a line received after its commit date
SELECT o_orderpriority, count(*) AS late_orders
  FROM orders o
 WHERE o_orderdate >= date '1994-04-01' AND o_orderdate < date '1994-10-01'
   AND EXISTS (SELECT 1 FROM lineitem l
				WHERE l.l_orderkey = o.o_orderkey AND l.l_receiptdate > l.l_commitdate)
 GROUP BY o_orderpriority
 ORDER BY o_orderpriority;

-- Q05: domestic revenue per Asian nation in one year (six tables)
SELECT n.n_name, sum(l.l_extendedprice * (1 - l.l_discount)) AS revenue
  FROM region r
  JOIN nation n ON n.n_regionkey = r.r_regionkey
  JOIN customer c ON c.c_nationkey = n.n_nationkey
  JOIN orders o ON o.o_custkey = c.c_custkey
  JOIN lineitem l ON l.l_orderkey = o.o_orderkey
  JOIN supplier s ON s.s_suppkey = l.l_suppkey AND s.s_nationkey = n.n_nationkey
 WHERE r.r_name = 'ASIA'
   AND o.o_orderdate >= date '1995-01-01' AND o.o_orderdate < date '1996-01-01'
 GROUP BY n.n_name
 ORDER BY revenue DESC;

-- Q06: what removing small discounts on small lines would have earned
SELECT sum(l_extendedprice * l_discount) AS forgone, count(*) AS lines
  FROM lineitem
 WHERE l_shipdate >= date '1996-01-01' AND l_shipdate < date '1997-01-01'
   AND l_discount BETWEEN 0.02 AND 0.04 AND l_quantity < 20;

-- Q07: trade between France and Germany by year and direction
SELECT sn.n_name AS from_nation, cn.n_name AS to_nation,
	   extract(year FROM l.l_shipdate) AS yr,
	   sum(l.l_extendedprice * (1 - l.l_discount)) AS volume
  FROM supplier s
  JOIN lineitem l ON l.l_suppkey = s.s_suppkey
  JOIN orders o ON o.o_orderkey = l.l_orderkey
  JOIN customer c ON c.c_custkey = o.o_custkey
  JOIN nation sn ON sn.n_nationkey = s.s_nationkey
  JOIN nation cn ON cn.n_nationkey = c.c_nationkey
 WHERE ((sn.n_name = 'FRANCE' AND cn.n_name = 'GERMANY')
		OR (sn.n_name = 'GERMANY' AND cn.n_name = 'FRANCE'))
   AND l.l_shipdate BETWEEN date '1995-01-01' AND date '1996-12-31'
 GROUP BY 1, 2, 3
 ORDER BY 1, 2, 3;

-- Q08: Brazil's share of American purchases of one part type, by year
-- (eight tables: nation twice)
SELECT yr, sum(CASE WHEN supp_nation = 'BRAZIL' THEN vol ELSE 0 END) / sum(vol) AS share
  FROM (SELECT extract(year FROM o.o_orderdate) AS yr,
			   l.l_extendedprice * (1 - l.l_discount) AS vol, sn.n_name AS supp_nation
		  FROM part p
		  JOIN lineitem l ON l.l_partkey = p.p_partkey
		  JOIN supplier s ON s.s_suppkey = l.l_suppkey
		  JOIN orders o ON o.o_orderkey = l.l_orderkey
		  JOIN customer c ON c.c_custkey = o.o_custkey
		  JOIN nation cn ON cn.n_nationkey = c.c_nationkey
		  JOIN region r ON r.r_regionkey = cn.n_regionkey
		  JOIN nation sn ON sn.n_nationkey = s.s_nationkey
		 WHERE r.r_name = 'AMERICA' AND p.p_type = 'MEDIUM PLATED STEEL'
		   AND o.o_orderdate BETWEEN date '1995-01-01' AND date '1996-12-31') AS t
 GROUP BY yr
 ORDER BY yr;

-- Q09: margin by supplier nation and year on parts whose name has "olive"
SELECT n.n_name, extract(year FROM o.o_orderdate) AS yr,
	   sum(l.l_extendedprice * (1 - l.l_discount) - ps.ps_supplycost * l.l_quantity) AS margin
  FROM part p
  JOIN lineitem l ON l.l_partkey = p.p_partkey
  JOIN partsupp ps ON ps.ps_partkey = l.l_partkey AND ps.ps_suppkey = l.l_suppkey
  JOIN supplier s ON s.s_suppkey = l.l_suppkey
  JOIN orders o ON o.o_orderkey = l.l_orderkey
  JOIN nation n ON n.n_nationkey = s.s_nationkey
 WHERE p.p_name LIKE '%olive%'
 GROUP BY 1, 2
 ORDER BY 1, 2 DESC;

-- Q10: customers who returned the most in one quarter
SELECT c.c_custkey, c.c_name, n.n_name, c.c_acctbal,
	   sum(l.l_extendedprice * (1 - l.l_discount)) AS returned
  FROM customer c
  JOIN orders o ON o.o_custkey = c.c_custkey
  JOIN lineitem l ON l.l_orderkey = o.o_orderkey
  JOIN nation n ON n.n_nationkey = c.c_nationkey
 WHERE o.o_orderdate >= date '1993-07-01' AND o.o_orderdate < date '1993-10-01'
   AND l.l_returnflag = 'R'
 GROUP BY c.c_custkey, c.c_name, n.n_name, c.c_acctbal
 ORDER BY returned DESC, c.c_custkey
 LIMIT 20;

-- Q11: the parts holding a large share of Japan's stock value
SELECT ps.ps_partkey, sum(ps.ps_supplycost * ps.ps_availqty) AS stock_value
  FROM partsupp ps
  JOIN supplier s ON s.s_suppkey = ps.ps_suppkey
  JOIN nation n ON n.n_nationkey = s.s_nationkey
 WHERE n.n_name = 'JAPAN'
 GROUP BY ps.ps_partkey
HAVING sum(ps.ps_supplycost * ps.ps_availqty) >
	   (SELECT 0.002 * sum(ps2.ps_supplycost * ps2.ps_availqty)
		  FROM partsupp ps2
		  JOIN supplier s2 ON s2.s_suppkey = ps2.ps_suppkey
		  JOIN nation n2 ON n2.n_nationkey = s2.s_nationkey
		 WHERE n2.n_name = 'JAPAN')
 ORDER BY stock_value DESC;

-- Q12: late receipts by ship mode, urgent against other orders
SELECT l.l_shipmode,
	   count(*) FILTER (WHERE o.o_orderpriority IN ('1-URGENT', '2-HIGH')) AS urgent,
	   count(*) FILTER (WHERE o.o_orderpriority NOT IN ('1-URGENT', '2-HIGH')) AS other
  FROM orders o
  JOIN lineitem l ON l.l_orderkey = o.o_orderkey
 WHERE l.l_shipmode IN ('RAIL', 'FOB', 'AIR')
   AND l.l_commitdate < l.l_receiptdate AND l.l_shipdate < l.l_commitdate
   AND l.l_receiptdate >= date '1997-01-01' AND l.l_receiptdate < date '1998-01-01'
 GROUP BY l.l_shipmode
 ORDER BY l.l_shipmode;

-- Q13: how many customers have how many orders (special requests left out)
SELECT order_count, count(*) AS customers
  FROM (SELECT c.c_custkey, count(o.o_orderkey) AS order_count
		  FROM customer c
		  LEFT JOIN orders o ON o.o_custkey = c.c_custkey
							AND o.o_comment NOT LIKE '%special%requests%'
		 GROUP BY c.c_custkey) AS per_customer
 GROUP BY order_count
 ORDER BY customers DESC, order_count DESC;

-- Q14: share of promotional parts in one month's revenue
SELECT 100 * sum(CASE WHEN p.p_type LIKE 'PROMO%' THEN l.l_extendedprice * (1 - l.l_discount) ELSE 0 END)
		   / sum(l.l_extendedprice * (1 - l.l_discount)) AS promo_pct
  FROM lineitem l
  JOIN part p ON p.p_partkey = l.l_partkey
 WHERE l.l_shipdate >= date '1997-03-01' AND l.l_shipdate < date '1997-04-01';

-- Q15: the suppliers with the highest revenue of one quarter
WITH revenue AS (
	SELECT l_suppkey AS suppkey, sum(l_extendedprice * (1 - l_discount)) AS total
	  FROM lineitem
	 WHERE l_shipdate >= date '1996-04-01' AND l_shipdate < date '1996-07-01'
	 GROUP BY l_suppkey)
SELECT s.s_suppkey, s.s_name, s.s_phone, r.total
  FROM supplier s
  JOIN revenue r ON r.suppkey = s.s_suppkey
 WHERE r.total >= (SELECT 0.98 * max(total) FROM revenue)
 ORDER BY r.total DESC;

-- Q16: suppliers without complaints per brand, type and size
SELECT p.p_brand, p.p_type, p.p_size, count(DISTINCT ps.ps_suppkey) AS suppliers
  FROM partsupp ps
  JOIN part p ON p.p_partkey = ps.ps_partkey
 WHERE p.p_brand <> 'Brand#34' AND p.p_type NOT LIKE 'LARGE BRUSHED%'
   AND p.p_size IN (3, 8, 15, 21, 29, 36, 42, 47)
   AND ps.ps_suppkey NOT IN (SELECT s_suppkey FROM supplier WHERE s_comment LIKE '%Customer%Complaints%')
 GROUP BY p.p_brand, p.p_type, p.p_size
 ORDER BY suppliers DESC, p.p_brand, p.p_type, p.p_size
 LIMIT 100;

-- Q17: yearly loss if the smallest lines of two brands' jars went unfilled
-- (a correlated subquery per line: a SubPlan of many loops)
SELECT sum(l.l_extendedprice) / 7.0 AS yearly
  FROM lineitem l
  JOIN part p ON p.p_partkey = l.l_partkey
 WHERE p.p_brand IN ('Brand#23', 'Brand#41') AND p.p_container = 'MED JAR'
   AND l.l_quantity < (SELECT 0.3 * avg(l2.l_quantity) FROM lineitem l2
						WHERE l2.l_partkey = p.p_partkey);

-- Q18: customers with very large orders
SELECT c.c_name, c.c_custkey, o.o_orderkey, o.o_orderdate, o.o_totalprice, sum(l.l_quantity) AS qty
  FROM customer c
  JOIN orders o ON o.o_custkey = c.c_custkey
  JOIN lineitem l ON l.l_orderkey = o.o_orderkey
 WHERE o.o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey
						 HAVING sum(l_quantity) > 250)
 GROUP BY c.c_name, c.c_custkey, o.o_orderkey, o.o_orderdate, o.o_totalprice
 ORDER BY o.o_totalprice DESC, o.o_orderdate
 LIMIT 100;

-- Q19: revenue of three brand / container / quantity combinations
SELECT sum(l.l_extendedprice * (1 - l.l_discount)) AS revenue
  FROM lineitem l
  JOIN part p ON p.p_partkey = l.l_partkey
 WHERE l.l_shipinstruct = 'DELIVER IN PERSON' AND l.l_shipmode IN ('AIR', 'REG AIR')
   AND ((p.p_brand = 'Brand#11' AND p.p_container LIKE 'SM %' AND l.l_quantity BETWEEN 1 AND 11
		 AND p.p_size BETWEEN 1 AND 5)
		OR (p.p_brand = 'Brand#24' AND p.p_container LIKE 'MED %' AND l.l_quantity BETWEEN 10 AND 20
			AND p.p_size BETWEEN 1 AND 10)
		OR (p.p_brand = 'Brand#52' AND p.p_container LIKE 'LG %' AND l.l_quantity BETWEEN 20 AND 30
			AND p.p_size BETWEEN 1 AND 15));

-- Q20: Canadian suppliers with surplus stock of "ivory" parts
SELECT s.s_name, s.s_address
  FROM supplier s
  JOIN nation n ON n.n_nationkey = s.s_nationkey
 WHERE n.n_name = 'CANADA'
   AND s.s_suppkey IN (
		SELECT ps.ps_suppkey FROM partsupp ps
		 WHERE ps.ps_partkey IN (SELECT p_partkey FROM part WHERE p_name LIKE 'ivory%')
		   AND ps.ps_availqty > (SELECT 0.5 * sum(l.l_quantity) FROM lineitem l
								  WHERE l.l_partkey = ps.ps_partkey AND l.l_suppkey = ps.ps_suppkey
									AND l.l_shipdate >= date '1995-01-01'
									AND l.l_shipdate < date '1996-01-01'))
 ORDER BY s.s_name;

-- Q21: Saudi suppliers who alone kept multi-supplier orders waiting
SELECT s.s_name, count(*) AS waited
  FROM supplier s
  JOIN lineitem l1 ON l1.l_suppkey = s.s_suppkey
  JOIN orders o ON o.o_orderkey = l1.l_orderkey
  JOIN nation n ON n.n_nationkey = s.s_nationkey
 WHERE o.o_orderstatus = 'F' AND l1.l_receiptdate > l1.l_commitdate
   AND n.n_name = 'SAUDI ARABIA'
   AND EXISTS (SELECT 1 FROM lineitem l2
				WHERE l2.l_orderkey = l1.l_orderkey AND l2.l_suppkey <> l1.l_suppkey)
   AND NOT EXISTS (SELECT 1 FROM lineitem l3
					WHERE l3.l_orderkey = l1.l_orderkey AND l3.l_suppkey <> l1.l_suppkey
					  AND l3.l_receiptdate > l3.l_commitdate)
 GROUP BY s.s_name
 ORDER BY waited DESC, s.s_name
 LIMIT 100;

-- Q22: well-funded customers of some phone areas who never ordered
SELECT substr(c.c_phone, 1, 2) AS area, count(*) AS customers, sum(c.c_acctbal) AS balance
  FROM customer c
 WHERE substr(c.c_phone, 1, 2) IN ('11', '14', '19', '23', '27', '30', '33')
   AND c.c_acctbal > (SELECT avg(c2.c_acctbal) FROM customer c2
					   WHERE c2.c_acctbal > 0 AND substr(c2.c_phone, 1, 2) IN ('11', '14', '19', '23', '27', '30', '33'))
   AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.o_custkey = c.c_custkey)
 GROUP BY area
 ORDER BY area;
