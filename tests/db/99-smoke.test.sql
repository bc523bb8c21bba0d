begin;
select plan(2);
select ok(true, 'true is ok');
select is(1, 1, 'one');
select * from finish();
rollback;
